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
``StepReport.codec_seconds`` and ``server_codec_seconds`` time the encoding, decoding and
merging in steps 2-5 (Quant-DP's "extra decoding and encoding time", Slim-DP Sec. 4.3.1).
All K local agents start from the same seeded initial model, which stands for the
initial Pull(w0) of Alg. 1. Local agents hosted by one process are trained together as
batched ``Replicas``; a process hosts the agents ``transport.is_local`` says it does.
"""

from __future__ import annotations

import time

import torch
from torch import nn

from ..codecs import Codec, CodecState, StateBook, make_codec, pair_seed
from ..comm import Envelope, Transport
from ..models import Replicas
from .local_state import LocalState
from .optimizers import make_optimizer
from .report import StepReport, Tally
from .sections import ParameterServerSection
from .server import ServerAgent


class CenterAgent(ServerAgent):
    """The parameter server: global model, optimizer, and (delta pulls) the workers' copy."""

    def __init__(self, model: nn.Module, section: ParameterServerSection, push_codec: Codec, pull_codec: Codec,
                 workers: int, seed: int):
        super().__init__(dict(model.named_parameters()), push_codec, pull_codec, range(workers),
                         lambda k: seed + 1000 + k, seed + 2000)
        self.optimizer = make_optimizer(section.optimizer, list(self.params.values()), section.lr, section.momentum,
                                        section.weight_decay, section.adagrad_eps)
        self.pull_mode, self.workers = section.pull_mode, workers
        self.client_copy = {n: p.clone() for n, p in self.params.items()} if self.pull_mode == "delta" else None

    def aggregate(self, pushes: list[Envelope]) -> None:
        total = self.sum_pushes(pushes)
        for name, p in self.params.items():
            p.grad = total[name].div_(self.workers)
        self.optimizer.step()

    def extra_state(self) -> dict:
        return {"optimizer": self.optimizer.state_dict(),
                "client_copy": None if self.client_copy is None else {n: t.clone() for n, t in self.client_copy.items()}}

    def load_extra_state(self, state: dict) -> None:
        self.optimizer.load_state_dict(state["optimizer"])
        if self.client_copy is not None:
            for name, t in self.client_copy.items():
                t.copy_(state["client_copy"][name])

    def pull_messages(self, tally: Tally) -> list[Envelope]:
        """Encode every parameter (or delta) once and address it to every worker; the
        center's agent id is ``workers``."""
        out = []
        for name, p in self.params.items():
            if self.pull_mode == "params":
                message = self.pull_codec.encode(p, self.pull_state, name)
            else:
                message = self.pull_codec.encode(p - self.client_copy[name], self.pull_state, name)
                self.client_copy[name] += self.pull_codec.decode(message, None, name, like=p)
            tally.add("pull", self.pull_state.last)
            out.extend(Envelope(self.workers, k, name, message) for k in range(self.workers))
        return out


class PlumpDP(LocalState):
    """One synchronous Plump-DP run on a transport; ``step`` does steps 1-5 above."""

    phases = ("push", "pull")
    Section = ParameterServerSection

    def __init__(self, model: nn.Module, transport: Transport, workers: int,
                 section: ParameterServerSection | None = None, seed: int = 0, loss: str = "cross_entropy"):
        section = section or ParameterServerSection()
        self.transport, self.workers, self.center_id = transport, workers, workers
        self.push_codec, self.pull_codec = make_codec(section.push_codec), make_codec(section.pull_codec)
        for codec in (self.push_codec, self.pull_codec):
            codec.warm_up()  # compile or load kernels now, not inside the first timed step
        self.pull_mode = section.pull_mode
        self.local_workers = [k for k in range(workers) if transport.is_local(k)]
        self.replicas = Replicas(model, max(1, len(self.local_workers)), loss=loss,
                                 seeds=[seed + 7000 + k for k in self.local_workers] or [seed + 7000])
        self.push_states = {k: CodecState(seed + 3000 + k) for k in self.local_workers}
        self.pull_states = StateBook(pair_seed(seed + 5000))  # each worker's own state for the center's pulls
        self.center = (CenterAgent(model, section, self.push_codec, self.pull_codec, workers, seed)
                       if transport.is_local(self.center_id) else None)
        self.roles = {**{k: "worker" for k in range(workers)}, self.center_id: "server"}

    @classmethod
    def from_config(cls, model, transport, config, steps_per_epoch: int):
        return cls(model, transport, config.workers, config.section, config.seed, config.loss)

    def step(self, step: int, x: torch.Tensor, y: torch.Tensor) -> StepReport:
        """x, y: the local workers' batches stacked (len(local_workers), B, ...)."""
        t0 = time.perf_counter()
        outbox, tally = [], Tally()
        if self.local_workers:
            losses, correct, grads = self.replicas.loss_and_grads(x, y)
            t = time.perf_counter()
            for i, k in enumerate(self.local_workers):
                for name, g in grads.items():
                    outbox.append(Envelope(k, self.center_id,
                                           name, self.push_codec.encode(g[i], self.push_states[k], name)))
                    tally.add("push", self.push_states[k].last)
            codec_seconds = time.perf_counter() - t
        else:
            losses, correct, codec_seconds = torch.zeros(0), torch.zeros(0), 0.0
        worker_seconds = time.perf_counter() - t0
        inbox = self.transport.exchange(outbox, step, "push")
        t1 = time.perf_counter()
        outbox, server_codec_seconds = [], 0.0
        if self.center is not None:
            self.center.aggregate(inbox)  # decoding the pushes, then the optimizer step
            t = time.perf_counter()
            outbox = self.center.pull_messages(tally)
            server_codec_seconds = self.center.decode_seconds + time.perf_counter() - t
        center_seconds = time.perf_counter() - t1
        inbox = self.transport.exchange(outbox, step, "pull")
        t2 = time.perf_counter()
        index = {k: i for i, k in enumerate(self.local_workers)}
        for env in inbox:
            target = self.replicas.params[env.tensor][index[env.receiver]]
            value = self.pull_codec.decode(env.message, self.pull_states(env.receiver, env.sender), env.tensor,
                                           like=target)
            if self.pull_mode == "params":
                target.copy_(value)
            else:
                target.add_(value)
        worker_seconds += time.perf_counter() - t2
        codec_seconds += time.perf_counter() - t2
        return StepReport(loss_sum=float(losses.sum()), correct=int(correct.sum()), samples=int(y.numel()),
                          local_workers=len(self.local_workers), worker_seconds=worker_seconds,
                          server_seconds=center_seconds, codec_seconds=codec_seconds,
                          server_codec_seconds=server_codec_seconds, tally=tally)

    def global_params(self) -> dict[str, torch.Tensor] | None:
        return None if self.center is None else self.center.params
