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

``StepReport.codec_seconds`` and ``server_codec_seconds`` time steps 2, 3 (decoding), 4
and 5: what the paper counts into communication time ("the extra time to extract
parameters/updates according to exploration and core-selection", Sec. 4.3.1).
"""

from __future__ import annotations

import time

import torch
from torch import nn

from ..codecs import CodecState, StateBook, make_codec, pair_seed
from ..comm import Envelope, Transport
from ..models import Replicas
from ..policies import CoreExplorer
from .flat_layout import FlatLayout
from .local_state import LocalState
from .optimizers import make_optimizer
from .report import StepReport, Tally
from .sections import SlimDPSection
from .server import ServerAgent


def make_core_explorer(section: SlimDPSection, seed: int) -> CoreExplorer:
    return CoreExplorer(section.alpha, section.epsilon, section.refresh, section.selection, seed=seed)


class CenterAgent(ServerAgent):
    """The global model as groups of the flat vector, its optimizer and its selection policy."""

    def __init__(self, groups: dict[str, torch.Tensor], section: SlimDPSection, workers: int, seed: int):
        codec = make_codec(section.push_codec)
        super().__init__(groups, codec, codec, range(workers), lambda k: seed + 1000 + k, seed + 2000)
        self.workers = workers
        self.optimizer = make_optimizer("sgd", list(self.params.values()), section.lr, section.momentum,
                                        section.weight_decay, 0.0)
        self.scale = 1.0 / workers if section.server_scale == "mean" else 1.0
        self.policy = make_core_explorer(section, seed + 2500)

    def update(self, pushes: list[Envelope]) -> None:
        """Step 3: w <- w - lr * scale * (sum of the decoded pushes)."""
        total = self.sum_pushes(pushes)
        for key, w in self.params.items():
            w.grad = total[key].mul_(self.scale)
        self.optimizer.step()

    def broadcast(self, step: int, tally: Tally) -> list[Envelope]:
        """Step 4: each group's core and explorer of w^{t+1}, addressed to every local agent."""
        out = []
        for key, w in self.params.items():
            message = self.pull_codec.encode(w, self.pull_state, key, self.policy.decide(step, key, w))
            tally.add("pull", self.pull_state.last)
            out.extend(Envelope(self.workers, k, key, message) for k in range(self.workers))
        return out

    def extra_state(self) -> dict:
        return {"optimizer": self.optimizer.state_dict(), "policy": self.policy.state_dict()}

    def load_extra_state(self, state: dict) -> None:
        self.optimizer.load_state_dict(state["optimizer"])
        self.policy.load_state_dict(state["policy"])


class SlimDP(LocalState):
    """One synchronous Slim-DP run on a transport; ``step`` does steps 1-5 above."""

    phases = ("push", "pull")
    Section = SlimDPSection

    def __init__(self, model: nn.Module, transport: Transport, workers: int, section: SlimDPSection | None = None,
                 seed: int = 0, loss: str = "cross_entropy"):
        section = section or SlimDPSection()
        self.transport, self.workers, self.center_id = transport, workers, workers
        self.lr, self.local_update = section.lr, section.local_update
        self.codec = make_codec(section.push_codec)
        self.local_workers = [k for k in range(workers) if transport.is_local(k)]
        self.replicas = Replicas(model, max(1, len(self.local_workers)), loss=loss,
                                 seeds=[seed + 7000 + k for k in self.local_workers] or [seed + 7000])
        self.layout = FlatLayout({n: p[0] for n, p in self.replicas.params.items()})
        self.groups = ({"model": (0, self.layout.numel)} if section.scope == "global" else
                       {p.name: (p.offset, p.offset + p.numel) for p in self.layout.pieces})
        self.push_states = {k: CodecState(seed + 3000 + k) for k in self.local_workers}
        self.push_policies = {k: make_core_explorer(section, seed + 3500 + k) for k in self.local_workers}
        self.pull_states = StateBook(pair_seed(seed + 5000))  # each local agent's cache of the center's keys
        initial = self.layout.flatten({n: p.detach() for n, p in model.named_parameters()})
        self.center = (CenterAgent({key: initial[lo:hi] for key, (lo, hi) in self.groups.items()}, section,
                                   workers, seed) if transport.is_local(self.center_id) else None)
        self.roles = {**{k: "worker" for k in range(workers)}, self.center_id: "server"}
        self._flat = torch.empty(self.layout.numel, device=initial.device)

    @classmethod
    def from_config(cls, model, transport, config, steps_per_epoch: int):
        return cls(model, transport, config.workers, config.section, config.seed, config.loss)

    def step(self, step: int, x: torch.Tensor, y: torch.Tensor) -> StepReport:
        """x, y: the local agents' batches stacked (len(local_workers), B, ...)."""
        t0 = time.perf_counter()
        outbox, tally, codec_seconds = [], Tally(), 0.0
        if self.local_workers:
            losses, correct, grads = self.replicas.loss_and_grads(x, y)
            for i, k in enumerate(self.local_workers):
                delta = self.layout.flatten({n: g[i] for n, g in grads.items()}, out=self._flat)
                t = time.perf_counter()
                for key, (lo, hi) in self.groups.items():
                    decision = self.push_policies[k].decide(step, key, delta[lo:hi])
                    outbox.append(Envelope(k, self.center_id, key,
                                           self.codec.encode(delta[lo:hi], self.push_states[k], key, decision)))
                    tally.add("push", self.push_states[k].last)
                codec_seconds += time.perf_counter() - t
            if self.local_update:
                for name, g in grads.items():
                    self.replicas.params[name].sub_(g, alpha=self.lr)
        else:
            losses, correct = torch.zeros(0), torch.zeros(0)
        worker_seconds = time.perf_counter() - t0
        inbox = self.transport.exchange(outbox, step, "push")

        t1 = time.perf_counter()
        outbox, server_codec_seconds = [], 0.0
        if self.center is not None:
            self.center.update(inbox)
            t = time.perf_counter()
            outbox = self.center.broadcast(step, tally)
            server_codec_seconds = self.center.decode_seconds + time.perf_counter() - t
        server_seconds = time.perf_counter() - t1
        inbox = self.transport.exchange(outbox, step, "pull")

        t2 = time.perf_counter()
        codec_seconds += self._merge(inbox)
        worker_seconds += time.perf_counter() - t2
        return StepReport(loss_sum=float(losses.sum()), correct=int(correct.sum()), samples=int(y.numel()),
                          local_workers=len(self.local_workers), worker_seconds=worker_seconds,
                          server_seconds=server_seconds, codec_seconds=codec_seconds,
                          server_codec_seconds=server_codec_seconds, tally=tally)

    def _merge(self, inbox: list[Envelope]) -> float:
        """Step 5 for every local agent; returns the seconds spent merging."""
        index = {k: i for i, k in enumerate(self.local_workers)}
        by_worker: dict[int, list[Envelope]] = {}
        for env in inbox:
            by_worker.setdefault(env.receiver, []).append(env)
        seconds = 0.0
        for k, envelopes in by_worker.items():
            i = index[k]
            local = self.layout.flatten({n: p[i] for n, p in self.replicas.params.items()}, out=self._flat)
            t = time.perf_counter()
            for env in envelopes:
                lo, hi = self.groups[env.tensor]
                self.codec.merge(env.message, local[lo:hi], self.pull_states(k, env.sender), env.tensor)
            seconds += time.perf_counter() - t
            for name, value in self.layout.views(local).items():
                self.replicas.params[name][i].copy_(value)
        return seconds

    def global_params(self) -> dict[str, torch.Tensor] | None:
        if self.center is None:
            return None
        return self.layout.views(torch.cat([self.center.params[key] for key in self.groups]))
