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
from dataclasses import dataclass

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from thinwire.algorithms import (Declared, Round, Section, ServerAgent, StepReport, local_gradients, ready,
                                 register_algorithm)
from thinwire.codecs import CodecState, StateBook, make_codec
from thinwire.comm import DistributedTransport, Envelope
from thinwire.models import Replicas
from thinwire.seed_tree import SeedTree
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
    event: str = "relative_change(threshold=0.1)"      # the send policy of every peer


class EventRing(Declared):
    phases = ("ring",)
    Section = RingSection

    def __init__(self, model, transport, peers: int, section: RingSection, seed: int):
        self.transport, self.peers, self.lr = transport, peers, section.lr
        self.codec = ready(make_codec(section.push_codec))
        self.local_workers = [k for k in range(peers) if transport.is_local(k)]
        self.replicas = self.declare("replicas", Replicas(model, max(1, len(self.local_workers))))
        self.roles = {k: "peer" for k in range(peers)}
        seeds = SeedTree(seed)
        self.send_states = self.declare("send", {k: CodecState(seeds.seed("peer", k, "ring_codec"))
                                                 for k in self.local_workers})
        self.receive_states = self.declare("receive", StateBook(seeds.pairs("peer", "ring_receive")))
        self.policies = self.declare("policies", {k: ready(make_policy(section.event, seeds.seed("peer", k, "event")))
                                                  for k in self.local_workers})
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
        rnd = Round(self.transport, step)
        losses, correct = self.replicas.sgd_step(x, y, self.lr)
        for i, k in enumerate(self.local_workers):
            for name, p in self.replicas.params.items():
                rnd.send("ring", k, self.neighbours(k), name, p[i], self.codec, self.send_states[k], self.policies[k])
        for env in rnd.exchange("ring"):
            rnd.merge(self.codec, env, self.copy_of(env.receiver, env.sender, env.tensor),
                      self.receive_states(env.receiver, env.sender))
        for i, k in enumerate(self.local_workers):
            left, right = self.neighbours(k)
            for name, p in self.replicas.params.items():
                p[i] = (p[i] + self.copy_of(k, left, name) + self.copy_of(k, right, name)) / 3
        return rnd.report(losses, correct, y, len(self.local_workers))

    def global_params(self):
        local = {k: {n: p[i] for n, p in self.replicas.params.items()} for i, k in enumerate(self.local_workers)}
        return _gather_mean(self.transport, local, self.peers)


@dataclass(frozen=True)
class BroadcastSection(Section):
    push_codec: str = "binquant(bits=0, coder='raw')"
    lr: float = 0.1
    bits: str = "random_bits(choices=(2, 3, 5, 8))"   # the server's policy for the broadcast integer


class BitsServer(ServerAgent):
    def __init__(self, model, push_codec, pull_codec, workers, seeds, bits_policy):
        super().__init__(dict(model.named_parameters()), push_codec, pull_codec, range(workers), seeds, workers)
        self.policy = self.declare("policy", ready(make_policy(bits_policy, seeds.seed("server", workers, "bits"))))
        self.control_state = self.declare("control", CodecState(seeds.seed("server", workers, "control_codec")))


class BitsBroadcast(Declared):
    phases = ("control", "push", "pull")
    Section = BroadcastSection
    control_codec = make_codec("fp32")

    def __init__(self, model, transport, workers: int, section: BroadcastSection, seed: int):
        self.transport, self.workers, self.server_id, self.lr = transport, workers, workers, section.lr
        self.push_codec, self.pull_codec = ready(make_codec(section.push_codec)), ready(make_codec(section.pull_codec))
        self.local_workers = [k for k in range(workers) if transport.is_local(k)]
        self.replicas = self.declare("replicas", Replicas(model, max(1, len(self.local_workers))))
        self.roles = {**{k: "worker" for k in range(workers)}, workers: "server"}
        seeds = SeedTree(seed)
        self.push_states = self.declare("push", {k: CodecState(seeds.seed("worker", k, "push_codec"))
                                                 for k in self.local_workers})
        self.receive_states = self.declare("receive", StateBook(seeds.pairs("worker", "receive")))
        self.server = self.declare("server", BitsServer(model, self.push_codec, self.pull_codec, workers, seeds,
                                                        section.bits) if transport.is_local(workers) else None)

    @classmethod
    def from_config(cls, model, transport, config, steps_per_epoch):
        return cls(model, transport, config.workers, config.section, config.seed)

    def step(self, step, x, y) -> StepReport:
        rnd = Round(self.transport, step)
        if self.server is not None:
            bits = rnd.as_server().decide(self.server.policy, "bits", torch.zeros(())).bits
            rnd.send("control", self.server_id, range(self.workers), "bits", torch.tensor(float(bits)),
                     self.control_codec, self.server.control_state)
        chosen = {env.receiver: int(rnd.decode(self.control_codec, env, self.receive_states(env.receiver, env.sender)))
                  for env in rnd.as_worker().exchange("control")}
        losses, correct, grads = local_gradients(self.replicas, x, y)
        for i, k in enumerate(self.local_workers):
            for name, g in grads.items():  # the workers follow the broadcast integer
                rnd.send("push", k, [self.server_id], name, g[i], self.push_codec, self.push_states[k],
                         decision=Decision(bits=chosen[k]))
        inbox = rnd.exchange("push")
        if self.server is not None:
            for name, total in self.server.sum_pushes(rnd.as_server(), inbox).items():
                self.server.params[name] -= self.lr * total / self.workers
                rnd.send("pull", self.server_id, range(self.workers), name, self.server.params[name],
                         self.pull_codec, self.server.pull_state)
        index = {k: i for i, k in enumerate(self.local_workers)}
        for env in rnd.as_worker().exchange("pull"):
            rnd.decode(self.pull_codec, env, self.receive_states(env.receiver, env.sender),
                       out=self.replicas.params[env.tensor][index[env.receiver]])
        return rnd.report(losses, correct, y, len(self.local_workers))

    def global_params(self):
        return None if self.server is None else self.server.params


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
