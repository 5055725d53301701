"""Two small algorithms written only against the algorithm contract (thinwire.algorithms.contract),
used by test_contract.py to show that the core fits topologies beyond the parameter-server star:

- ``event_ring``: peers on a ring train locally; each tensor goes to both neighbours only
  when an event policy fires (it moved enough since it was last sent); receivers merge it
  into their copy of that neighbour (receiver state) and every peer averages itself with
  its two copies (decentralized SGD).
- ``bits_broadcast``: a server broadcasts one integer each round (phase ``control``), drawn
  by a policy; the workers quantize their gradient pushes to that many bits.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from thinwire.algorithms import Section, ServerAgent, StepReport, Tally, register_algorithm
from thinwire.codecs import CodecState, StateBook, make_codec, pair_seed
from thinwire.comm import DistributedTransport, Envelope
from thinwire.models import Replicas
from thinwire.policies import Decision, make_policy


def _gather_mean(transport, local: dict[int, dict[str, torch.Tensor]], agents: int) -> dict | None:
    """Mean over all agents' parameters, summed in agent order (collective)."""
    parts = transport.all_gather_object({a: {n: t.cpu() for n, t in p.items()} for a, p in local.items()})
    if transport.rank != 0:
        return None
    every = {a: p for part in parts for a, p in part.items()}
    names = list(every[0])
    return {n: sum(every[a][n] for a in range(agents)) / agents for n in names}


@dataclass(frozen=True)
class RingSection(Section):
    lr: float = 0.1
    event: str = "event(threshold=0.1)"      # the send policy of every peer


class EventRing:
    phases = ("ring",)
    Section = RingSection

    def __init__(self, model, transport, peers: int, section: RingSection, seed: int):
        self.transport, self.peers, self.lr = transport, peers, section.lr
        self.codec = make_codec(section.push_codec)
        self.local_workers = [k for k in range(peers) if transport.is_local(k)]
        self.replicas = Replicas(model, max(1, len(self.local_workers)))
        self.roles = {k: "peer" for k in range(peers)}
        self.send_states = {k: CodecState(seed + 100 + k) for k in self.local_workers}
        self.receive_states = StateBook(pair_seed(seed + 200))
        self.policies = {k: make_policy(section.event, seed + 300 + k) for k in self.local_workers}
        self.initial = {n: p.detach().clone() for n, p in model.named_parameters()}

    @classmethod
    def from_config(cls, model, transport, config, steps_per_epoch):
        return cls(model, transport, config.workers, config.section, config.seed)

    def neighbours(self, k: int) -> tuple[int, int]:
        return (k - 1) % self.peers, (k + 1) % self.peers

    def copy_of(self, receiver: int, sender: int, name: str) -> torch.Tensor:
        """The receiver's last copy of the sender's tensor (receiver state); starts at w0."""
        slot = self.receive_states(receiver, sender).slot(name)
        return slot.setdefault("copy", self.initial[name].clone())

    def step(self, step, x, y) -> StepReport:
        t0 = time.perf_counter()
        tally, outbox = Tally(), []
        losses, correct = self.replicas.sgd_step(x, y, self.lr)
        for i, k in enumerate(self.local_workers):
            for name, p in self.replicas.params.items():
                decision = self.policies[k].decide(step, name, p[i])
                if not decision.send:
                    tally.skip("ring")
                    continue
                message = self.codec.encode(p[i], self.send_states[k], name)
                tally.add("ring", self.send_states[k].last)
                self.policies[k].sent(step, name, p[i])
                outbox += [Envelope(k, peer, name, message) for peer in self.neighbours(k)]
        inbox = self.transport.exchange(outbox, step, "ring")
        for env in inbox:
            copy = self.copy_of(env.receiver, env.sender, env.tensor)
            self.codec.merge(env.message, copy, self.receive_states(env.receiver, env.sender), env.tensor)
        for i, k in enumerate(self.local_workers):
            left, right = self.neighbours(k)
            for name, p in self.replicas.params.items():
                p[i] = (p[i] + self.copy_of(k, left, name) + self.copy_of(k, right, name)) / 3
        return StepReport(loss_sum=float(losses.sum()), correct=int(correct.sum()), samples=int(y.numel()),
                          local_workers=len(self.local_workers), worker_seconds=time.perf_counter() - t0,
                          tally=tally)

    def global_params(self):
        local = {k: {n: p[i] for n, p in self.replicas.params.items()} for i, k in enumerate(self.local_workers)}
        return _gather_mean(self.transport, local, self.peers)

    def state_dict(self) -> dict:
        return {"replicas": {n: p.clone() for n, p in self.replicas.params.items()},
                "send": {k: s.state_dict() for k, s in self.send_states.items()},
                "receive": self.receive_states.state_dict(),
                "policies": {k: p.state_dict() for k, p in self.policies.items()}}

    def load_state_dict(self, state) -> None:
        for n, p in self.replicas.params.items():
            p.copy_(state["replicas"][n])
        for k, s in self.send_states.items():
            s.load_state_dict(state["send"][k])
        self.receive_states.load_state_dict(state["receive"])
        for k, p in self.policies.items():
            p.load_state_dict(state["policies"][k])


@dataclass(frozen=True)
class BroadcastSection(Section):
    push_codec: str = "binquant(bits=0, coder='raw')"
    lr: float = 0.1
    bits: str = "random_bits(choices=(2, 3, 5, 8))"   # the server's policy for the broadcast integer


class BitsServer(ServerAgent):
    def __init__(self, model, push_codec, pull_codec, workers, seed, bits_policy):
        super().__init__(dict(model.named_parameters()), push_codec, pull_codec, range(workers),
                         lambda k: seed + 10 + k, seed + 20)
        self.policy = make_policy(bits_policy, seed + 30)
        self.control_state = CodecState(seed + 40)

    def extra_state(self):
        return {"policy": self.policy.state_dict(), "control": self.control_state.state_dict()}

    def load_extra_state(self, state):
        self.policy.load_state_dict(state["policy"])
        self.control_state.load_state_dict(state["control"])


class BitsBroadcast:
    phases = ("control", "push", "pull")
    Section = BroadcastSection
    control_codec = make_codec("fp32")

    def __init__(self, model, transport, workers: int, section: BroadcastSection, seed: int):
        self.transport, self.workers, self.server_id, self.lr = transport, workers, workers, section.lr
        self.push_codec, self.pull_codec = make_codec(section.push_codec), make_codec(section.pull_codec)
        self.local_workers = [k for k in range(workers) if transport.is_local(k)]
        self.replicas = Replicas(model, max(1, len(self.local_workers)))
        self.roles = {**{k: "worker" for k in range(workers)}, workers: "server"}
        self.push_states = {k: CodecState(seed + 50 + k) for k in self.local_workers}
        self.receive_states = StateBook(pair_seed(seed + 60))
        self.server = (BitsServer(model, self.push_codec, self.pull_codec, workers, seed, section.bits)
                       if transport.is_local(workers) else None)

    @classmethod
    def from_config(cls, model, transport, config, steps_per_epoch):
        return cls(model, transport, config.workers, config.section, config.seed)

    def step(self, step, x, y) -> StepReport:
        t0 = time.perf_counter()
        tally, outbox = Tally(), []
        if self.server is not None:
            bits = self.server.policy.decide(step, "bits", torch.zeros(())).bits
            message = self.control_codec.encode(torch.tensor(float(bits)), self.server.control_state, "bits")
            tally.add("control", self.server.control_state.last)
            outbox = [Envelope(self.server_id, k, "bits", message) for k in range(self.workers)]
        chosen = {env.receiver: int(self.control_codec.decode(env.message, self.receive_states(env.receiver, env.sender),
                                                              "bits"))
                  for env in self.transport.exchange(outbox, step, "control")}
        losses, correct, grads = self.replicas.loss_and_grads(x, y)
        outbox = []
        for i, k in enumerate(self.local_workers):
            for name, g in grads.items():
                # the workers follow the broadcast integer
                message = self.push_codec.encode(g[i], self.push_states[k], name, Decision(bits=chosen[k]))
                tally.add("push", self.push_states[k].last)
                outbox.append(Envelope(k, self.server_id, name, message))
        inbox = self.transport.exchange(outbox, step, "push")
        outbox = []
        if self.server is not None:
            for name, total in self.server.sum_pushes(inbox).items():
                self.server.params[name] -= self.lr * total / self.workers
                message = self.pull_codec.encode(self.server.params[name], self.server.pull_state, name)
                tally.add("pull", self.server.pull_state.last)
                outbox += [Envelope(self.server_id, k, name, message) for k in range(self.workers)]
        index = {k: i for i, k in enumerate(self.local_workers)}
        for env in self.transport.exchange(outbox, step, "pull"):
            self.pull_codec.decode(env.message, self.receive_states(env.receiver, env.sender), env.tensor,
                                   out=self.replicas.params[env.tensor][index[env.receiver]])
        return StepReport(loss_sum=float(losses.sum()), correct=int(correct.sum()), samples=int(y.numel()),
                          local_workers=len(self.local_workers), worker_seconds=time.perf_counter() - t0,
                          tally=tally)

    def global_params(self):
        return None if self.server is None else self.server.params

    def state_dict(self) -> dict:
        return {"replicas": {n: p.clone() for n, p in self.replicas.params.items()},
                "push": {k: s.state_dict() for k, s in self.push_states.items()},
                "receive": self.receive_states.state_dict(),
                "server": None if self.server is None else self.server.state_dict()}

    def load_state_dict(self, state) -> None:
        for n, p in self.replicas.params.items():
            p.copy_(state["replicas"][n])
        for k, s in self.push_states.items():
            s.load_state_dict(state["push"][k])
        self.receive_states.load_state_dict(state["receive"])
        if self.server is not None:
            self.server.load_state_dict(state["server"])


register_algorithm("event_ring", EventRing)
register_algorithm("bits_broadcast", BitsBroadcast)


def _rank(rank, world, port, config_dict, root, queue):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        from thinwire.experiment import RunConfig, run
        result = run(RunConfig.from_dict(config_dict), DistributedTransport(), backend="gloo", root=root,
                     reuse=False, progress=False)
        dist.barrier()
        queue.put((rank, result.metrics if rank == 0 else None, result.ledger.rows() if rank == 0 else None))
    finally:
        dist.destroy_process_group()


def run_on_gloo(config, world: int, port: int, root: str):
    """Run ``config`` on ``world`` gloo processes; rank 0's (metrics, ledger rows)."""
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_rank, args=(r, world, port, config.to_dict(), root, queue)) for r in range(world)]
    for p in procs:
        p.start()
    results = dict((r, (m, rows)) for r, m, rows in (queue.get(timeout=300) for _ in procs))
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    return results[0]
