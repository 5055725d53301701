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
All K local agents start from the same seeded initial model, which stands for the
initial Pull(w0) of Alg. 1. Local agents hosted by one process are trained together as
batched ``Replicas``; a process hosts the agents ``transport.is_local`` says it does.
"""

from __future__ import annotations

import time

import torch
from torch import nn

from ..codecs import Codec, CodecState, Float32
from ..comm import Envelope, Transport
from ..models import Replicas
from .local_state import LocalState
from .optimizers import make_optimizer
from .report import StepReport, Tally

PULL_MODES = ("params", "delta")


class CenterAgent:
    """The parameter server: global model, optimizer, and the pull encoder's state."""

    def __init__(self, model: nn.Module, optimizer: str, lr: float, momentum: float,
                 push_codec: Codec, pull_codec: Codec, pull_mode: str, workers: int, seed: int):
        self.params = {n: p.detach().clone() for n, p in model.named_parameters()}
        self.optimizer = make_optimizer(optimizer, list(self.params.values()), lr, momentum)
        self.push_codec, self.pull_codec, self.pull_mode = push_codec, pull_codec, pull_mode
        self.workers = workers
        self.push_states = {k: CodecState(seed + 1000 + k) for k in range(workers)}
        self.pull_state = CodecState(seed + 2000)
        self.client_copy = {n: p.clone() for n, p in self.params.items()} if pull_mode == "delta" else None
        self._decoded = {n: torch.empty_like(p) for n, p in self.params.items()}  # reused every step

    def aggregate(self, pushes: list[Envelope]) -> None:
        total = {n: torch.zeros_like(p) for n, p in self.params.items()}
        for env in sorted(pushes, key=lambda e: (e.sender, e.tensor)):
            decoded = self._decoded[env.tensor]
            total[env.tensor] += self.push_codec.decode(env.message, self.push_states[env.sender], env.tensor, out=decoded)
        for name, p in self.params.items():
            p.grad = total[name].div_(self.workers)
        self.optimizer.step()

    def state_dict(self) -> dict:
        return {
            "params": {n: p.clone() for n, p in self.params.items()},
            "optimizer": self.optimizer.state_dict(),
            "push_states": {k: s.state_dict() for k, s in self.push_states.items()},
            "pull_state": self.pull_state.state_dict(),
            "client_copy": None if self.client_copy is None else {n: t.clone() for n, t in self.client_copy.items()},
        }

    def load_state_dict(self, state: dict) -> None:
        for name, p in self.params.items():
            p.copy_(state["params"][name])
        self.optimizer.load_state_dict(state["optimizer"])
        for k, s in self.push_states.items():
            s.load_state_dict(state["push_states"][k])
        self.pull_state.load_state_dict(state["pull_state"])
        if self.client_copy is not None:
            for name, t in self.client_copy.items():
                t.copy_(state["client_copy"][name])

    def pull_messages(self, tally: Tally) -> list[Envelope]:
        out = []
        for name, p in self.params.items():
            if self.pull_mode == "params":
                message = self.pull_codec.encode(p, self.pull_state, name)
            else:
                message = self.pull_codec.encode(p - self.client_copy[name], self.pull_state, name)
                self.client_copy[name] += self.pull_codec.decode(message, None, name)
            tally.add("pull", self.pull_state.last)
            out.extend(Envelope(self.workers, k, name, message) for k in range(self.workers))
        return out


class PlumpDP(LocalState):
    """One synchronous Plump-DP run on a transport; ``step`` does steps 1-5 above."""

    phases = ("push", "pull")

    def __init__(self, model: nn.Module, transport: Transport, workers: int, optimizer: str = "sgd",
                 lr: float = 0.1, momentum: float = 0.0, push_codec: Codec | None = None,
                 pull_codec: Codec | None = None, pull_mode: str = "params", seed: int = 0):
        if pull_mode not in PULL_MODES:
            raise ValueError(f"pull_mode must be one of {PULL_MODES}, got {pull_mode!r}")
        self.transport = transport
        self.workers = workers
        self.center_id = workers
        self.push_codec = push_codec or Float32()
        self.pull_codec = pull_codec or Float32()
        self.pull_mode = pull_mode
        self.local_workers = [k for k in range(workers) if transport.is_local(k)]
        self.replicas = Replicas(model, max(1, len(self.local_workers)))
        self.push_states = {k: CodecState(seed + 3000 + k) for k in self.local_workers}
        self.center = (CenterAgent(model, optimizer, lr, momentum, self.push_codec, self.pull_codec,
                                   pull_mode, workers, seed)
                       if transport.is_local(self.center_id) else None)
        self.roles = {**{k: "worker" for k in range(workers)}, self.center_id: "server"}

    def step(self, step: int, x: torch.Tensor, y: torch.Tensor) -> StepReport:
        """x, y: the local workers' batches stacked (len(local_workers), B, ...)."""
        t0 = time.perf_counter()
        outbox, tally = [], Tally()
        if self.local_workers:
            losses, correct, grads = self.replicas.loss_and_grads(x, y)
            for i, k in enumerate(self.local_workers):
                for name, g in grads.items():
                    outbox.append(Envelope(k, self.center_id,
                                           name, self.push_codec.encode(g[i], self.push_states[k], name)))
                    tally.add("push", self.push_states[k].last)
        else:
            losses, correct = torch.zeros(0), torch.zeros(0)
        worker_seconds = time.perf_counter() - t0
        inbox = self.transport.exchange(outbox, step, "push")
        t1 = time.perf_counter()
        outbox = []
        if self.center is not None:
            self.center.aggregate(inbox)
            outbox = self.center.pull_messages(tally)
        center_seconds = time.perf_counter() - t1
        inbox = self.transport.exchange(outbox, step, "pull")
        t2 = time.perf_counter()
        index = {k: i for i, k in enumerate(self.local_workers)}
        for env in inbox:
            value = self.pull_codec.decode(env.message, None, env.tensor)
            target = self.replicas.params[env.tensor][index[env.receiver]]
            if self.pull_mode == "params":
                target.copy_(value)
            else:
                target.add_(value)
        worker_seconds += time.perf_counter() - t2
        return StepReport(loss_sum=float(losses.sum()), correct=int(correct.sum()), samples=int(y.numel()),
                          local_workers=len(self.local_workers), worker_seconds=worker_seconds,
                          server_seconds=center_seconds, tally=tally)

    def global_params(self) -> dict[str, torch.Tensor] | None:
        return None if self.center is None else self.center.params
