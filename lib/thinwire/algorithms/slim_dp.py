"""Slim-DP (Sun et al. 2018, Alg. 1): local agents push a subset of their update, the
center agent broadcasts a subset of the global model, each subset a core of the largest
entries plus a random explorer.

Agents: K local agents (ids 0..K-1) and the center agent (id K). The model is one flat
vector (``FlatLayout``), cut into groups: the whole model (``scope="global"``) or one group
per parameter tensor (``"tensor"``); each group is selected and sent on its own. Each step
(one communication round, p = 1 mini-batch):
1. LocalTrain: local agent k computes the gradient g_k of its mini-batch on its model
   w_k; delta_k = g_k (the text leaves open whether delta holds the learning rate; here it
   does not, and the center applies it). With ``local_update`` (default) w_k also takes
   its own SGD step, w_k -= lr g_k: LocalTrain trains the local model, and the Merge of
   step 5 keeps it on the coordinates not pulled.
2. CoreSelection + Exploration + Push: each local agent's ``core_explorer`` policy picks
   the core (largest |delta_k|, every q rounds) and the explorer (fresh every round, its
   own generator); the ``keycache`` codec sends core values under cached keys and
   explorer (key, value) pairs.
3. The center adds the K pushes' entries in sender order (nothing off the sent
   coordinates) and updates w^{t+1} = w^t - lr * scale * sum_k T_C(delta_k), scale = 1/K
   (``server_scale="mean"``, the default: Plump-DP's averaged SGD when alpha = 1) or 1
   (``"sum"``, Alg. 1 read literally). The text prints the update without its minus sign;
   with delta a gradient it must subtract.
4. CoreSelection + Exploration + Pull: the center's policy selects on |w^{t+1}|, the model
   it is about to broadcast (Alg. 1 writes w^t, but the broadcast is of the updated model),
   and one message goes to every local agent.
5. Merge: each local agent overwrites the pulled coordinates of w_k (``Codec.merge``) and
   keeps the rest.
All agents start from the same seeded model (the initial Pull(w^0) of Alg. 1). Eq. 3's
q(.) is the gradient g(.) of Eq. 1. With alpha = 1 and epsilon = 0 every message carries
every coordinate and the run is Plump-DP's, number for number.

The round kit (``round.py``) times steps 2, 3 (decoding), 4 and 5 as worker and server
codec seconds, the core and explorer choice apart as selection: what the paper counts into
communication time ("the extra time to extract parameters/updates according to exploration
and core-selection", Sec. 4.3.1).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from ..codecs import make_codec
from ..comm import Envelope, Transport
from ..policies import CoreExplorer
from .agents import set_up_workers
from .phases import PULL, PUSH
from .declared import Declared
from .flat_layout import FlatLayout
from .optimizers import make_optimizer
from .report import StepReport
from ..seed_tree import SeedTree
from .round import Round, local_gradients, ready
from ..policies.core_explorer import check_core_explorer
from ..validation import boolean, float_in, one_of
from .section import Section
from .server import ServerAgent
from .registry import register_algorithm

SCOPES = ("global", "tensor")
SERVER_SCALES = ("mean", "sum")


@dataclass(frozen=True)
class SlimDPSection(Section):
    """Slim-DP's local and center agents (``slim_dp.py``): the communication set (alpha),
    the explorer (epsilon), the core refresh period (q) and how the center applies pushes."""

    push_codec: str = "keycache"       # Slim-DP's wire: cached core keys + explorer (key, value) pairs
    pull_codec: str = "keycache"
    alpha: float = 0.3                 # communication set: alpha * N coordinates per message
    epsilon: float = 0.15              # explorer: epsilon * N random coordinates outside the core (epsilon <= alpha)
    refresh: int = 10                  # q: rounds between core selections (the core's keys are cached between)
    selection: str = "exact"           # exact (top-k) | sampled (threshold from a random sample)
    scope: str = "global"              # global: one selection over the whole model | tensor: one per parameter tensor
    lr: float = 0.1                    # eta: local SGD step and the center's step
    momentum: float = 0.0              # the center's SGD momentum
    weight_decay: float = 0.0          # the center's L2 weight decay
    server_scale: str = "mean"         # the center adds lr * (mean | sum) of the pushed gradients
    local_update: bool = True          # local agents keep their own SGD step on coordinates they did not pull

    def __post_init__(self):
        super().__post_init__()
        for name in ("push_codec", "pull_codec"):
            if getattr(self, name) != "keycache":
                raise ValueError(f"{name}={getattr(self, name)!r} is not allowed: Slim-DP sends through the key "
                                 "cache, so it must be 'keycache'")
        check_core_explorer(self.alpha, self.epsilon, self.refresh, self.selection)
        one_of("scope", self.scope, SCOPES)
        float_in("lr", self.lr, 0.0, 100.0, lo_open=True)
        float_in("momentum", self.momentum, 0.0, 0.999)
        float_in("weight_decay", self.weight_decay, 0.0, 1.0)
        one_of("server_scale", self.server_scale, SERVER_SCALES)
        boolean("local_update", self.local_update)


def make_core_explorer(section: SlimDPSection, seed: int) -> CoreExplorer:
    return ready(CoreExplorer(section.alpha, section.epsilon, section.refresh, section.selection, seed=seed))


class CenterAgent(ServerAgent):
    """The global model as groups of the flat vector, its optimizer and its selection policy."""

    def __init__(self, groups: dict[str, torch.Tensor], section: SlimDPSection, codec, workers: int,
                 seeds: SeedTree):
        super().__init__(groups, codec, codec, range(workers), seeds, workers)
        self.workers = workers
        self.optimizer = self.declare("optimizer", make_optimizer(
            "sgd", list(self.params.values()), section.lr, section.momentum, section.weight_decay, 0.0))
        self.scale = 1.0 / workers if section.server_scale == "mean" else 1.0
        self.policy = self.declare("policy", make_core_explorer(section, seeds.seed("server", workers, "pull_policy")))

    def update(self, rnd: Round, pushes: list[Envelope]) -> None:
        """Step 3: w <- w - lr * scale * (sum of the decoded pushes)."""
        total = self.sum_pushes(rnd, pushes)
        for key, w in self.params.items():
            w.grad = total[key].mul_(self.scale)
        self.optimizer.step()

    def broadcast(self, rnd: Round) -> None:
        """Step 4: each group's core and explorer of w^{t+1}, addressed to every local agent."""
        for key, w in self.params.items():
            rnd.send(PULL, self.workers, range(self.workers), key, w, self.pull_codec, self.pull_state, self.policy)


@register_algorithm("slim_dp")
class SlimDP(Declared):
    """One synchronous Slim-DP run on a transport; ``step`` does steps 1-5 above."""

    phases = (PUSH, PULL)
    Section = SlimDPSection

    def __init__(self, model: nn.Module, transport: Transport, workers: int, section: SlimDPSection | None = None,
                 seed: int = 0, loss: str = "cross_entropy"):
        section = section or SlimDPSection()
        self.transport, self.workers, self.center_id = transport, workers, workers
        self.lr, self.local_update = section.lr, section.local_update
        self.codec = ready(make_codec(section.push_codec))
        seeds = set_up_workers(self, model, transport, workers, seed, loss)  # pull states: the key caches
        self.layout = FlatLayout({n: p[0] for n, p in self.replicas.params.items()})
        self.groups = ({"model": (0, self.layout.numel)} if section.scope == "global" else
                       {p.name: (p.offset, p.offset + p.numel) for p in self.layout.pieces})
        self.push_policies = self.declare("push_policies", {
            k: make_core_explorer(section, seeds.seed("worker", k, "push_policy")) for k in self.local_workers})
        initial = self.layout.flatten({n: p.detach() for n, p in model.named_parameters()})
        self.center = self.declare("center", CenterAgent(
            {key: initial[lo:hi] for key, (lo, hi) in self.groups.items()}, section, self.codec, workers, seeds)
            if transport.is_local(self.center_id) else None)
        self.roles = {**{k: "worker" for k in range(workers)}, self.center_id: "server"}
        self._flat = torch.empty(self.layout.numel, device=initial.device)

    @classmethod
    def from_config(cls, model, transport, config, steps_per_epoch: int):
        return cls(model, transport, config.workers, config.section, config.seed, config.loss)

    def step(self, step: int, x: torch.Tensor, y: torch.Tensor) -> StepReport:
        """x, y: the local agents' batches stacked (len(local_workers), B, ...)."""
        rnd = Round(self.transport, step)
        losses, correct, grads = local_gradients(self.replicas, x, y)          # 1. LocalTrain
        for i, k in enumerate(self.local_workers):                             # 2. CoreSelection, Exploration, Push
            delta = self.layout.flatten({n: g[i] for n, g in grads.items()}, out=self._flat)
            for key, (lo, hi) in self.groups.items():
                rnd.send(PUSH, k, [self.center_id], key, delta[lo:hi], self.codec, self.push_states[k],
                         self.push_policies[k])
        if self.local_update:                                                  # (LocalTrain's own SGD step)
            for name, g in grads.items():
                self.replicas.params[name].sub_(g, alpha=self.lr)
        inbox = rnd.exchange(PUSH)
        if self.center is not None:
            self.center.update(rnd.as_server(), inbox)                         # 3. the center's update
            self.center.broadcast(rnd)                                         # 4. CoreSelection, Exploration, Pull
        self.merge(rnd, rnd.as_worker().exchange(PULL))                      # 5. Merge
        return rnd.report(losses, correct, y, len(self.local_workers))

    def merge(self, rnd: Round, inbox: list[Envelope]) -> None:
        """Step 5 for every local agent: the pulled coordinates overwrite its model."""
        index = {k: i for i, k in enumerate(self.local_workers)}
        by_worker: dict[int, list[Envelope]] = {}
        for env in inbox:
            by_worker.setdefault(env.receiver, []).append(env)
        for k, envelopes in by_worker.items():
            i = index[k]
            local = self.layout.flatten({n: p[i] for n, p in self.replicas.params.items()}, out=self._flat)
            for env in envelopes:
                lo, hi = self.groups[env.tensor]
                rnd.merge(self.codec, env, local[lo:hi], self.pull_states(k, env.sender))
            for name, value in self.layout.views(local).items():
                self.replicas.params[name][i].copy_(value)

    def global_params(self) -> dict[str, torch.Tensor] | None:
        if self.center is None:
            return None
        return self.layout.views(torch.cat([self.center.params[key] for key in self.groups]))
