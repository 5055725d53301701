"""Decentralized SGD on a ring: D-PSGD (Lian et al. 2017, the baseline of Ghosh et al. 2021,
Algorithm A) and EventGraD (Ghosh et al. 2021, Algorithm B, Eq. 5).

Agents: K >= 3 peers (ids 0..K-1) on a ring; peer j's neighbours are j - 1 and j + 1
(mod K), mixing weights 1/3 for itself and for each neighbour (W symmetric, doubly
stochastic). Each peer keeps a copy of each neighbour's parameters: the last values it
received (the receiver's state). Each iteration (x_{k+1} = W x_k - lr g(x_k)):
1. every peer computes the gradient of its mini-batch at its current parameters;
2. for each parameter tensor, the peer's ``push_policy`` decides whether to send it:
   ``always`` (D-PSGD) or ``event(...)`` (EventGraD's trigger on the tensor's norm,
   ``policies/event_trigger.py``); on a send the tensor goes to both neighbours, as a
   whole (``fp32``) or as the Top-K entries the policy chose (``topk``, values + indices);
3. each neighbour overwrites its copy with what arrived (a merge decode: a Top-K message
   overwrites only the entries it carries); copies of tensors not sent stay as they were;
4. every peer averages each tensor with its two copies: theta = (theta + left + right) / 3;
5. and applies the gradient of step 1 (computed before the averaging): theta -= lr v, with
   v = g (+ weight decay) or SGD momentum kept per peer (the CIFAR-10 setting).
The evaluated model is the mean of the peers' parameters (as the official code's final
all-reduce): it is not communication and is not in the ledger. Batch-norm running
statistics (the CIFAR-10 ResNet) are never sent or averaged: each peer keeps its own, and
the evaluated model takes peer 0's, as the code's rank 0 evaluates with its own.

Delivery is synchronous: every message of a round arrives in that round. The official
code (soumyadipghosh/eventgrad) writes with one-sided MPI puts that land asynchronously
into windows that start at zero, so there a peer may average with zeros or with a value
one iteration old; here a peer's copies start as the shared initial model and the same
seed gives the same numbers on every transport.

Messages are counted per tensor per neighbour: D-PSGD sends 2 x tensors x K per
iteration. ``extra`` holds, for peer 0, the norm and threshold of each traced tensor at
each test (Figs. 4-5 of the paper), the share of tensors each peer sent and, where one
process holds every peer, ``mean_step_share``: the fraction of its summed gradient steps
that the peers' mean model travelled (``mean_motion.py``; 1 for D-PSGD, below 1 when
copies that lag their senders pull the mean back).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from ..codecs import make_codec
from ..comm import Envelope, Transport
from ..policies import make_policy
from ..specs import codec_under_policy, policy_spec
from ..validation import float_in, int_in
from .agents import set_up_workers
from .phases import RING
from .declared import Declared
from .mean_motion import MeanMotion
from .report import StepReport
from .round import Round, local_gradients, ready
from .section import Section
from .registry import register_algorithm


@dataclass(frozen=True)
class EventGradSection(Section):
    """Ring peers: what triggers a send, how it is written, and the local SGD."""

    push_codec: str = "fp32"           # fp32: whole tensors | topk: the entries an event(topk=...) policy chose
    # always: D-PSGD | event(horizon=, history=2, rule='paper'|'code', forced=29, topk=0.0): EventGraD
    push_policy: str = "event(horizon=1.0)"
    lr: float = 0.05                   # SGD step of every peer
    momentum: float = 0.0              # SGD momentum, kept per peer
    weight_decay: float = 0.0          # L2 weight decay, per peer
    trace: int = 8                     # tensors of peer 0 whose norm and threshold are recorded (evenly spaced)

    def __post_init__(self):
        super().__post_init__()
        if self.pull_codec != "fp32":
            raise ValueError(f"pull_codec={self.pull_codec!r} is not allowed: ring peers only push (to their "
                             "neighbours), so it must stay 'fp32'")
        object.__setattr__(self, "push_policy", policy_spec("push_policy", self.push_policy))
        codec_under_policy("push_codec", self.push_codec, "push_policy", self.push_policy)
        float_in("lr", self.lr, 0.0, 100.0, lo_open=True)
        float_in("momentum", self.momentum, 0.0, 0.999)
        float_in("weight_decay", self.weight_decay, 0.0, 1.0)
        int_in("trace", self.trace, 0, 1024)

    def check_common(self, common) -> None:
        if common.workers < 3:
            raise ValueError(f"workers={common.workers!r} is not allowed: a ring of peers with two distinct "
                             "neighbours each needs workers >= 3")


@register_algorithm("eventgrad")
class EventGraD(Declared):
    """One synchronous run of D-PSGD or EventGraD on a ring; ``step`` does steps 1-5 above."""

    phases = (RING,)
    Section = EventGradSection

    def __init__(self, model: nn.Module, transport: Transport, peers: int, section: EventGradSection | None = None,
                 seed: int = 0, loss: str = "cross_entropy"):
        section = section or EventGradSection()
        if peers < 3:
            raise ValueError(f"workers={peers!r} is not allowed: a ring needs workers >= 3")
        self.transport, self.peers = transport, peers
        self.lr, self.momentum, self.weight_decay = section.lr, section.momentum, section.weight_decay
        self.codec = ready(make_codec(section.push_codec))
        seeds = set_up_workers(self, model, transport, peers, seed, loss, role="peer",
                               receives=("receive_states", "push_receive"),
                               buffers=True)  # batch-norm statistics stay per peer
        params = self.replicas.params
        # the receiver's state: each local peer's copies of its left and right neighbours (K_local, ...)
        self.left = self.declare("left", {n: p.clone().contiguous() for n, p in params.items()})
        self.right = self.declare("right", {n: p.clone().contiguous() for n, p in params.items()})
        self.policies = self.declare("policies", {
            j: ready(make_policy(section.push_policy, seeds.seed("peer", j, "push_policy"))) for j in self.local_workers})
        names = list(params)
        count = min(section.trace, len(names))
        spacing = (len(names) - 1) / max(1, count - 1)
        self.traced = [names[round(i * spacing)] for i in range(count)] if count else []
        self.roles = {j: "peer" for j in range(peers)}
        # the mean model's motion by part (``mean_motion.py``): measured where one process holds every peer
        whole = self.local_workers == list(range(peers)) and section.trace > 0
        self.motion = self.declare("motion", MeanMotion(self.replicas) if whole else None)

    @classmethod
    def from_config(cls, model, transport, config, steps_per_epoch: int):
        return cls(model, transport, config.workers, config.section, config.seed, config.loss)

    def neighbours(self, j: int) -> tuple[int, int]:
        """(left, right) of peer j on the ring."""
        return (j - 1) % self.peers, (j + 1) % self.peers

    def step(self, step: int, x: torch.Tensor, y: torch.Tensor) -> StepReport:
        rnd = Round(self.transport, step)
        losses, correct, grads = local_gradients(self.replicas, x, y)          # 1. g(x_k) at the current theta
        sent = {}
        for i, j in enumerate(self.local_workers):                             # 2. events: send to both neighbours
            sent[j] = 0
            for name, p in self.replicas.params.items():
                sent[j] += rnd.send(RING, j, self.neighbours(j), name, p[i], self.codec, self.push_states[j],
                                    self.policies[j]) is not None
        self.receive(rnd, rnd.exchange(RING))                                # 3. neighbours overwrite their copies
        with torch.no_grad():
            self.watch(rnd, None)
            for name, p in self.replicas.params.items():                       # 4. theta = (theta + left + right) / 3
                p.add_(self.left[name]).add_(self.right[name]).div_(3.0)
            self.watch(rnd, "averaging")
            self.replicas.descend(grads, self.lr, self.momentum,               # 5. theta -= lr g (before averaging)
                                  self.weight_decay)
            self.watch(rnd, "gradient")
        return rnd.report(losses, correct, y, len(self.local_workers), extra=self.measurements(sent))

    def watch(self, rnd: Round, part: str | None) -> None:
        """Where the mean model is (``None``), or what ``part`` moved it by (untimed; see
        ``mean_motion.py``); nothing unless one process holds every peer."""
        if self.motion is not None:
            with rnd.untimed():
                if part is None:
                    self.motion.mark()
                else:
                    self.motion.add(part)

    def receive(self, rnd: Round, inbox: list[Envelope]) -> None:
        """Step 3: each message overwrites (merges into) the receiver's copy of its sender."""
        index = {j: i for i, j in enumerate(self.local_workers)}
        for env in inbox:
            left, _ = self.neighbours(env.receiver)
            copies = self.left if env.sender == left else self.right
            rnd.merge(self.codec, env, copies[env.tensor][index[env.receiver]],
                      self.receive_states(env.receiver, env.sender))

    def measurements(self, sent: dict[int, int]) -> dict[str, float]:
        """Peer 0's norm and threshold per traced tensor (Figs. 4-5); the share of tensors sent."""
        if not self.local_workers:
            return {}
        tensors = len(self.replicas.params)
        out = {"tensors_sent_share": sum(sent.values()) / (tensors * len(sent))}
        if self.motion is not None:
            out["mean_step_share"] = self.motion.share()
        trace = getattr(self.policies.get(0), "trace", None)
        if trace:
            for name in self.traced:
                out[f"norm/{name}"], out[f"threshold/{name}"] = trace[name]
        return out

    def global_params(self) -> dict[str, torch.Tensor] | None:
        """The mean of every peer's parameters, with peer 0's buffers (batch-norm
        statistics), on rank 0 (collective on torch.distributed; rank 0 holds peer 0)."""
        params = self.replicas.params
        own = {n: b[0] for n, b in self.replicas.buffers.items()} if 0 in self.local_workers else {}
        if self.transport.world_size == 1:
            return {**{n: p.mean(0) for n, p in params.items()}, **own}
        mine = {j: {n: p[i].cpu() for n, p in params.items()} for i, j in enumerate(self.local_workers)}
        gathered = self.transport.all_gather_object(mine)
        if self.transport.rank != 0:
            return None
        every = {j: t for part in gathered for j, t in part.items()}
        device = next(iter(params.values())).device
        return {**{n: torch.stack([every[j][n] for j in range(self.peers)]).to(device).mean(0) for n in params}, **own}
