"""MQGrad (Cui et al. 2018, Alg. 1 and Fig. 3): a synchronous parameter server whose
gradients travel quantized both ways, at a bit width a learning agent sets.

Agents: K workers (ids 0..K-1) and the server (id K). All start from the same seeded
model. Each iteration m:
1. every worker computes its gradient g_{p,m} and loss L_{p,m} on its batch; the loss
   includes the L2 term weight_decay/2 * ||w||^2 of the large weight matrices (2-D, more
   than ``decay_over`` entries: the paper's third and fourth layers), whose gradient
   weight_decay * w is in g_{p,m} (Sec. 4.1: "cross entropy loss with l2 norm");
2. with a controller policy (the SARSA agent, ``policies/sarsa_bits.py``) the workers send
   L_{p,m} to the server (phase ``loss``); the server averages them into L^m and tells the
   agent, which decides K every T iterations (Alg. 2); the server broadcasts K every
   iteration (phase ``bits``; Alg. 1 lines 41-47: "send the last iteration K");
3. each worker quantizes g_{p,m} at K and pushes it (phase ``push``): ``push_codec``, by
   default ``sized(colquant(bits=0), min_numel=105001, ndim=2)``: the code's test, 2-D
   tensors of more than 105,000 entries, per-column min-max; every other tensor as fp32;
4. the server de-quantizes the pushes, averages them in worker order, quantizes the
   average at the same K (``pull_codec``), applies the decoded result to its model
   (w <- w - lr g^m, lr = 0.2 in the code) and broadcasts it (phase ``pull``);
5. every worker de-quantizes it and applies the same update: workers and server hold the
   same model, bit for bit.
Without a controller the loss and bit messages do not exist: ``bits_policy="none"``
leaves the bit width to the codecs (Fix(K): ``colquant(bits=K)``), and a per-tensor
policy (``entropy_bits(...)``: the "Adaptive" baseline) decides at every encode, the
workers' and the server's, each message carrying its K.

Time. The server prices each iteration's messages on the run's network model (the
``net_10mbs`` preset stands for the paper's 10 MB/s) exactly as ``comm/network.py``
prices the ledger (it sees every message: all go to or from it), and adds
``compute_seconds`` for the workers' forward and backward pass: the *modelled* time of the
iteration, deterministic. The agent's reward reads it (or the measured wall time, or the
code's 5 + 5 bits ms: the policy's ``time``). ``time_budget`` (modelled seconds, 0 for
none) ends the run after the iteration that reaches it (``StepReport.stop``): the paper
compares methods at equal training time.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace

import torch
from torch import nn

from ..codecs import CodecState, Float32, StateBook, make_codec
from ..comm import Envelope, Transport, network_preset
from ..policies import Controller, Decision, make_policy
from .agents import set_up_workers
from .phases import BITS, LOSS, PULL, PUSH
from .declared import Declared
from .report import StepReport
from ..seed_tree import SeedTree
from .round import Round, local_gradients, ready
from ..specs import pairs_tried_now, policy_spec
from ..validation import check, float_in, int_in
from .section import Section
from .server import ServerAgent
from .registry import register_algorithm

QUANTIZED = "sized(colquant(bits=0), min_numel=105001, ndim=2)"


@dataclass(frozen=True)
class MQGradSection(Section):
    """MQGrad's server and workers: the quantizer, who sets its bit width, the update and the time model."""

    push_codec: str = QUANTIZED        # worker -> server gradients
    pull_codec: str = QUANTIZED        # the server's re-quantized average
    bits_policy: str = "sarsa_bits()"  # a controller on the server | a per-tensor policy at each encode | none
    lr: float = 0.2                    # the server's (and workers') step, hard-coded 0.2 in the code
    weight_decay: float = 0.00175      # L2 on the large weight matrices (in the loss)
    decay_over: int = 105000           # ... those 2-D tensors with more entries than this
    compute_seconds: float = 0.02      # modelled seconds of a worker's forward and backward pass per iteration
    time_budget: float = 0.0           # modelled seconds after which the run ends (0: run all steps)

    def __post_init__(self):
        super().__post_init__()
        if self.bits_policy != "none":
            object.__setattr__(self, "bits_policy", policy_spec("bits_policy", self.bits_policy))
        float_in("lr", self.lr, 0.0, 100.0, lo_open=True)
        float_in("weight_decay", self.weight_decay, 0.0, 1.0)
        int_in("decay_over", self.decay_over, 0)
        float_in("compute_seconds", self.compute_seconds, 0.0, 1e6)
        float_in("time_budget", self.time_budget, 0.0, 1e12)
        if pairs_tried_now():
            self._try_codecs_under_bits_policy()
        check("time_budget", self.time_budget, self.time_budget == 0 or self.time_budget > self.compute_seconds,
              "0 (none) or more than one iteration's compute_seconds")

    def _try_codecs_under_bits_policy(self) -> None:
        """Encode a small matrix with each codec at the policy's first width, so that a codec
        that takes no bit width fails here, naming both."""
        probe = torch.linspace(-1.0, 1.0, 1024).reshape(8, 128)
        policy = None if self.bits_policy == "none" else make_policy(self.bits_policy)
        for name in ("push_codec", "pull_codec"):
            codec = make_codec(getattr(self, name))
            codec = getattr(codec, "inner", codec)  # sized(...): the branch the decisions are for
            try:
                decision = None
                if isinstance(policy, Controller):
                    decision = Decision(bits=getattr(policy, "initial", 8))
                elif policy is not None:
                    decision = policy.decide(0, "probe", probe)
                codec.encode(probe, CodecState(0), "probe", decision)
            except (ValueError, TypeError) as exc:
                raise ValueError(f"{name}={getattr(self, name)!r} with bits_policy={self.bits_policy!r} is not "
                                 f"allowed: {exc}") from None


def decayed(params: dict[str, torch.Tensor], over: int) -> list[str]:
    """The weight matrices the L2 term covers: 2-D, more than ``over`` entries."""
    return [n for n, p in params.items() if p.dim() == 2 and p.numel() > over]


class Server(ServerAgent):
    """The parameter server: the model, the agent and the iteration's modelled time."""

    def __init__(self, model: nn.Module, section: MQGradSection, push_codec, pull_codec, workers: int,
                 seeds: SeedTree, policy):
        super().__init__(dict(model.named_parameters()), push_codec, pull_codec, range(workers), seeds, workers)
        self.workers, self.lr = workers, section.lr
        self.policy = self.declare("policy", policy)
        self.loss_states = self.declare("loss_states", {k: CodecState(seeds.seed("server", workers, "loss", k))
                                                        for k in range(workers)})
        self.elapsed = self.declare("elapsed", torch.zeros((), dtype=torch.float64))  # modelled seconds so far

    def average_loss(self, rnd: Round, inbox: list[Envelope]) -> float:
        """Step 2: L^m, the mean of the workers' losses (in worker order)."""
        losses = [float(rnd.decode(FLOAT32, env, self.loss_states[env.sender])[0])
                  for env in sorted(inbox, key=lambda e: e.sender)]
        return sum(losses) / self.workers

    def update(self, rnd: Round, pushes: list[Envelope], policy=None, decision: Decision | None = None) -> None:
        """Step 4: the average, re-quantized (under a per-tensor ``policy`` or the agent's
        ``decision``), applied here as the workers will decode it, and addressed to them."""
        total = self.sum_pushes(rnd, pushes)
        for name, p in self.params.items():
            mean = total[name].div_(self.workers)
            message = rnd.send(PULL, self.workers, range(self.workers), name, mean, self.pull_codec,
                               self.pull_state, policy, decision)
            with rnd.timed("decode"):
                p.sub_(self.pull_codec.decode(message, None, name, like=p), alpha=self.lr)


FLOAT32 = Float32()


@dataclass(frozen=True)
class Measured:
    """What an MQGrad iteration measures beyond the common report, one metric each: the
    agent's decision on the iterations it makes one (``SarsaBits.trace``'s columns, in its
    order: ``SARSA``) and the iteration's modelled seconds (the server's)."""

    sarsa_level: float | None = None
    sarsa_bits: float | None = None
    sarsa_greedy: float | None = None
    sarsa_explored: float | None = None
    sarsa_reward: float | None = None
    sarsa_q_keep: float | None = None
    sarsa_q_up: float | None = None
    modelled_time: float | None = None

    def extra(self) -> dict[str, float]:
        """The step report's extras: the fields measured this iteration."""
        return {name: value for name, value in asdict(self).items() if value is not None}


SARSA = tuple(f.name for f in fields(Measured) if f.name.startswith("sarsa_"))


@register_algorithm("mqgrad")
class MQGrad(Declared):
    """One synchronous MQGrad run on a transport; ``step`` does steps 1-5 above."""

    phases = (LOSS, BITS, PUSH, PULL)
    Section = MQGradSection
    reads_network = True  # the agent's reward and the time budget price messages on config.network
    stops_early = True    # a time budget ends the run (StepReport.stop)

    def __init__(self, model: nn.Module, transport: Transport, workers: int, section: MQGradSection | None = None,
                 seed: int = 0, loss: str = "cross_entropy", network: str = "net_10mbs"):
        section = section or MQGradSection()
        self.transport, self.workers, self.server_id = transport, workers, workers
        self.section, self.network = section, network_preset(network)
        self.push_codec, self.pull_codec = ready(make_codec(section.push_codec)), ready(make_codec(section.pull_codec))
        seeds = set_up_workers(self, model, transport, workers, seed, loss)
        self.decayed = decayed(dict(model.named_parameters()), section.decay_over)
        spec = section.bits_policy
        probe = None if spec == "none" else make_policy(spec)
        self.controlled = isinstance(probe, Controller)
        self.per_tensor = probe is not None and not self.controlled
        self.push_policies = self.declare("push_policies", {
            k: ready(make_policy(spec, seeds.seed("worker", k, "push_policy"))) for k in self.local_workers}
            if self.per_tensor else {})
        self.bits_states = self.declare("bits_states", StateBook(seeds.pairs("worker", "bits_receive")))
        server_policy = ready(make_policy(spec, seeds.seed("server", workers, "policy"))) if probe is not None else None
        self.server = self.declare("server", Server(model, section, self.push_codec, self.pull_codec, workers, seeds,
                                                    server_policy) if transport.is_local(self.server_id) else None)
        self.roles = {**{k: "worker" for k in range(workers)}, self.server_id: "server"}

    @classmethod
    def from_config(cls, model, transport, config, steps_per_epoch: int):
        return cls(model, transport, config.workers, config.section, config.seed, config.loss, config.network)

    def step(self, step: int, x: torch.Tensor, y: torch.Tensor) -> StepReport:
        """x, y: the local workers' batches stacked (len(local_workers), B, ...)."""
        rnd, measured = Round(self.transport, step), Measured()
        losses, correct, grads = local_gradients(self.replicas, x, y)             # 1. gradients and losses
        losses = self._regularized(losses, grads)
        if self.controlled:                                                       # 2. losses in, K out
            bits, measured = self._choose_bits(rnd, step, losses)
        for i, k in enumerate(self.local_workers):                                # 3. quantize and push
            decision = Decision(bits=bits[k]) if self.controlled else None
            for name, g in grads.items():
                rnd.send(PUSH, k, [self.server_id], name, g[i], self.push_codec, self.push_states[k],
                         self.push_policies.get(k), decision)
        inbox = rnd.exchange(PUSH)
        if self.server is not None:                                               # 4. average, re-quantize, apply
            self.server.update(rnd.as_server(), inbox, self.server.policy if self.per_tensor else None,
                               self.server.policy.choice if self.controlled else None)
        index = {k: i for i, k in enumerate(self.local_workers)}
        for env in rnd.as_worker().exchange(PULL):                                # 5. apply
            target = self.replicas.params[env.tensor][index[env.receiver]]
            value = rnd.decode(self.pull_codec, env, self.pull_states(env.receiver, env.sender), like=target)
            target.sub_(value, alpha=self.section.lr)
        report = rnd.report(losses, correct, y, len(self.local_workers))
        if self.server is not None:
            report.stop, measured = self._account(step, rnd, measured)
        report.extra = measured.extra()
        return report

    def _choose_bits(self, rnd: Round, step: int, losses: torch.Tensor) -> tuple[dict[int, int], Measured]:
        """Step 2: the workers' losses to the server, whose agent sees their mean and decides
        K; K back to every worker (worker -> its K), and the agent's decision as measured."""
        measured = Measured()
        for i, k in enumerate(self.local_workers):
            rnd.send(LOSS, k, [self.server_id], "loss", losses[i:i + 1], FLOAT32, self.push_states[k])
        inbox = rnd.exchange(LOSS)
        if self.server is not None:
            rnd.as_server()
            self.server.policy.observe(step, {"loss": self.server.average_loss(rnd, inbox)})
            chosen = rnd.decide(self.server.policy, "bits", torch.zeros(0))
            rnd.send(BITS, self.server_id, range(self.workers), "bits", torch.tensor([float(chosen.bits)]),
                     FLOAT32, self.server.pull_state)
            measured = self._decision(step)
        return {env.receiver: int(rnd.decode(FLOAT32, env, self.bits_states(env.receiver, env.sender))[0])
                for env in rnd.as_worker().exchange(BITS)}, measured

    def _regularized(self, losses: torch.Tensor, grads: dict[str, torch.Tensor]) -> torch.Tensor:
        """Step 1's L2 term: wd/2 ||w||^2 added to each worker's loss, wd w to its gradient."""
        wd = self.section.weight_decay
        if not wd or not grads:
            return losses
        losses = losses.clone()
        for name in self.decayed:
            w = self.replicas.params[name]
            grads[name].add_(w, alpha=wd)  # the gradients are this step's own tensors
            # row-major: the same sum whatever layout the replicas keep w in
            losses += 0.5 * wd * torch.linalg.vector_norm(w.contiguous().reshape(w.shape[0], -1), dim=1).square()
        return losses

    def _account(self, step: int, rnd: Round, measured: Measured) -> tuple[bool, Measured]:
        """The iteration's modelled seconds (compute + every phase priced on the network: all
        of its messages go to or from the server), told to the agent; (whether the time
        budget is spent, ``measured`` with them)."""
        seconds = self.section.compute_seconds + rnd.priced(self.network, self.server_id)
        self.server.elapsed += seconds
        if self.controlled:
            self.server.policy.observe(step, {"seconds": seconds, "wall": rnd.elapsed()})
        budget = self.section.time_budget
        return bool(budget) and float(self.server.elapsed) >= budget, replace(measured, modelled_time=seconds)

    def _decision(self, step: int) -> Measured:
        """The agent's last decision, on the iteration it was made (``SarsaBits.trace``'s
        columns after the iteration, NaN left out)."""
        trace = getattr(self.server.policy, "memory", {}).get("trace")
        if trace is None or not len(trace) or int(trace[-1, 0]) != step:
            return Measured()
        return Measured(**{name: float(v) for name, v in zip(SARSA, trace[-1, 1:].tolist()) if v == v})

    def global_params(self) -> dict[str, torch.Tensor] | None:
        return None if self.server is None else self.server.params
