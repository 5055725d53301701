"""Plump-DP: synchronous parameter-server data parallelism (Slim-DP paper, Sec. 2).

Agents: K local agents (ids 0..K-1) and one center agent (id K). Each step:
1. LocalTrain: every local agent computes the gradient of its mini-batch (p = 1).
2. Push: each local agent sends every gradient tensor through ``push_codec``.
3. The center agent decodes the K pushes, averages them (in sender order, so the sum
   is the same on every transport) and applies the optimizer to the global model.
4. Pull: the center agent sends every parameter tensor through ``pull_codec`` —
   the parameters themselves (``pull_mode="params"``), or their change since the copy
   the local agents hold (``"delta"``, kept center-side, as in gradient dropping).
5. Merge: local agents overwrite (params) or add to (delta) their copy.
The round kit (``round.py``) times the encoding, decoding and merging of steps 2-5 as
worker and server codec seconds (Quant-DP's "extra decoding and encoding time", Slim-DP
Sec. 4.3.1).
All K local agents start from the same seeded initial model, which stands for the
initial Pull(w0) of Alg. 1. Local agents hosted by one process are trained together as
batched ``Replicas``; a process hosts the agents ``transport.is_local`` says it does.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from ..codecs import make_codec
from ..comm import Envelope, Transport
from .agents import set_up_workers
from .phases import PULL, PUSH
from .declared import Declared
from .optimizers import OPTIMIZERS, make_optimizer
from .report import StepReport
from ..seed_tree import SeedTree
from .round import Round, local_gradients, ready
from ..specs import codec_under_policy
from ..validation import float_in, one_of
from .section import Section
from .server import ServerAgent
from .registry import register_algorithm

PULL_MODES = ("params", "delta")


@dataclass(frozen=True)
class ParameterServerSection(Section):
    """Plump-DP's center agent and the sharded parameter server (gradient dropping)."""

    optimizer: str = "sgd"             # sgd | adagrad, applied by the server(s)
    lr: float = 0.1
    momentum: float = 0.0              # SGD momentum (server side)
    weight_decay: float = 0.0          # L2 weight decay (server side)
    adagrad_eps: float = 1e-10         # AdaGrad's epsilon (torch's default)
    pull_mode: str = "params"          # params | delta (changes since the copy the workers hold)

    def __post_init__(self):
        super().__post_init__()
        for name in ("push_codec", "pull_codec"):  # these servers ask no policy: the codecs decide alone
            codec_under_policy(name, getattr(self, name))
        one_of("optimizer", self.optimizer, OPTIMIZERS)
        float_in("lr", self.lr, 0.0, 100.0, lo_open=True)
        float_in("momentum", self.momentum, 0.0, 0.999)
        float_in("weight_decay", self.weight_decay, 0.0, 1.0)
        float_in("adagrad_eps", self.adagrad_eps, 0.0, 1.0, lo_open=True)
        one_of("pull_mode", self.pull_mode, PULL_MODES)
        if self.pull_mode == "delta" and make_codec(self.pull_codec).memory:
            raise ValueError(f"pull_codec={self.pull_codec!r} is not allowed with pull_mode='delta': it keeps a "
                             "residual of its own, but the delta from the workers' copy already carries what was "
                             "not sent; use a codec without memory (e.g. graddrop(..., residual=False))")


class CenterAgent(ServerAgent):
    """The parameter server: global model, optimizer, and (delta pulls) the workers' copy."""

    def __init__(self, model: nn.Module, section: ParameterServerSection, push_codec, pull_codec, workers: int,
                 seeds: SeedTree):
        super().__init__(dict(model.named_parameters()), push_codec, pull_codec, range(workers), seeds, workers)
        self.optimizer = self.declare("optimizer", make_optimizer(
            section.optimizer, list(self.params.values()), section.lr, section.momentum, section.weight_decay,
            section.adagrad_eps))
        self.pull_mode, self.workers = section.pull_mode, workers
        self.client_copy = self.declare("client_copy", {n: p.clone() for n, p in self.params.items()}
                                        if self.pull_mode == "delta" else None)

    def aggregate(self, rnd: Round, pushes: list[Envelope]) -> None:
        """Step 3: the mean of the decoded pushes is the gradient of one optimizer step."""
        total = self.sum_pushes(rnd, pushes)
        for name, p in self.params.items():
            p.grad = total[name].div_(self.workers)
        self.optimizer.step()

    def pull(self, rnd: Round) -> None:
        """Step 4: every parameter (or its delta from the workers' copy) encoded once and
        addressed to every worker; the center's agent id is ``workers``."""
        for name, p in self.params.items():
            sent = p if self.pull_mode == "params" else p - self.client_copy[name]
            message = rnd.send(PULL, self.workers, range(self.workers), name, sent, self.pull_codec,
                               self.pull_state)
            if self.pull_mode == "delta":  # the workers' copy takes what they will decode
                with rnd.timed("decode"):
                    self.client_copy[name] += self.pull_codec.decode(message, None, name, like=p)


@register_algorithm("plump_dp")
class PlumpDP(Declared):
    """One synchronous Plump-DP run on a transport; ``step`` does steps 1-5 above."""

    phases = (PUSH, PULL)
    Section = ParameterServerSection

    def __init__(self, model: nn.Module, transport: Transport, workers: int,
                 section: ParameterServerSection | None = None, seed: int = 0, loss: str = "cross_entropy"):
        section = section or ParameterServerSection()
        self.transport, self.workers, self.center_id = transport, workers, workers
        self.push_codec, self.pull_codec = ready(make_codec(section.push_codec)), ready(make_codec(section.pull_codec))
        self.pull_mode = section.pull_mode
        seeds = set_up_workers(self, model, transport, workers, seed, loss)
        self.center = self.declare("center", CenterAgent(model, section, self.push_codec, self.pull_codec, workers,
                                                         seeds) if transport.is_local(self.center_id) else None)
        self.roles = {**{k: "worker" for k in range(workers)}, self.center_id: "server"}

    @classmethod
    def from_config(cls, model, transport, config, steps_per_epoch: int):
        return cls(model, transport, config.workers, config.section, config.seed, config.loss)

    def step(self, step: int, x: torch.Tensor, y: torch.Tensor) -> StepReport:
        """x, y: the local workers' batches stacked (len(local_workers), B, ...)."""
        rnd = Round(self.transport, step)
        losses, correct, grads = local_gradients(self.replicas, x, y)           # 1. LocalTrain
        for i, k in enumerate(self.local_workers):                              # 2. Push
            for name, g in grads.items():
                rnd.send(PUSH, k, [self.center_id], name, g[i], self.push_codec, self.push_states[k])
        inbox = rnd.exchange(PUSH)
        if self.center is not None:                                             # 3. average, update
            self.center.aggregate(rnd.as_server(), inbox)
            self.center.pull(rnd)                                               # 4. Pull
        inbox = rnd.as_worker().exchange(PULL)
        index = {k: i for i, k in enumerate(self.local_workers)}
        for env in inbox:                                                       # 5. Merge
            target = self.replicas.params[env.tensor][index[env.receiver]]
            value = rnd.decode(self.pull_codec, env, self.pull_states(env.receiver, env.sender), like=target)
            target.copy_(value) if self.pull_mode == "params" else target.add_(value)
        return rnd.report(losses, correct, y, len(self.local_workers))

    def global_params(self) -> dict[str, torch.Tensor] | None:
        return None if self.center is None else self.center.params
