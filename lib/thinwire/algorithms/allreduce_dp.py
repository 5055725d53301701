"""Data parallelism by all-reduce: what ``DistributedDataParallel`` does, and the baseline a
user would pick instead of any of the papers' methods.

Agents: K workers (ids 0..K-1) with the same initial model, no server. Each step:
1. every worker computes the gradient g_w of its mini-batch;
2. the workers average their gradients with a ring all-reduce (``ring_allreduce.py``),
   all of them in one bucket, each divided by K before it is sent (DDP's default hook);
   the messages are ``push_codec``: ``fp32``, or ``fp16`` / ``bf16`` as DDP's
   ``fp16_compress_hook`` and ``bf16_compress_hook``;
   or, with ``exchange="allgather"``, any codec: each worker's gradient / K goes encoded
   to every other worker in one phase and each sums what it decodes (``allgather.py``),
   as a compressor that does not add up in its own format (top-k, QSGD) is used without
   a server;
   or, with ``powersgd_rank`` = r > 0 (from step ``powersgd_start`` on), PowerSGD
   (``powersgd.py``; Vogels et al. 2019, Alg. 1-2, as torch's ``powerSGD_hook``):
   2a. M = g_w (+ the worker's error) for each compressible matrix;
   2b. the tensors sent whole are all-reduced (phases ``whole.*``);
   2c. P = M Q, all-reduced as a sum (``p.*``), and orthogonalized: P^;
   2d. Q = M^T P^, all-reduced as a mean (``q.*``);
   2e. the gradient is P^ Q^T; the worker keeps error = M - P^ Q^T and Q;
3. every worker applies the averaged gradient with SGD (momentum and weight decay as
   torch.optim.SGD). All workers hold the same bits, so the evaluated model is worker
   0's; nothing is sent for it.
Phases are the ring's hops, so the network model prices 2 (K - 1) rounds per all-reduce
(one round for the all-gather).
DDP overlaps buckets with the backward pass; this loop does not (one bucket, after the
backward pass): how much overlap would hide is the network model's question.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from ..codecs import make_codec
from ..comm import Transport
from ..validation import boolean, float_in, int_in, one_of
from . import powersgd
from .agents import set_up_workers
from .allgather import allgather_sum
from .declared import Declared
from .report import StepReport
from .ring_allreduce import RING_CODECS, ring_allreduce, ring_phases
from .round import Round, local_gradients, ready
from .section import Section
from .registry import register_algorithm


EXCHANGES = ("ring", "allgather")


@dataclass(frozen=True)
class AllReduceSection(Section):
    """All-reduce workers: the ring's message format, PowerSGD, the local SGD."""

    push_codec: str = "fp32"           # the ring's messages: fp32 | fp16 | bf16; any codec with exchange allgather
    exchange: str = "ring"             # ring: a ring all-reduce | allgather: every worker's message to every other
    lr: float = 0.1
    momentum: float = 0.0
    weight_decay: float = 0.0
    powersgd_rank: int = 0             # 0: plain all-reduce; r >= 1: PowerSGD of rank r
    powersgd_start: int = 0            # steps of plain all-reduce before PowerSGD (the hook's start_powerSGD_iter)
    powersgd_min_rate: float = 2.0     # compress a matrix only if (n + m) r * rate < n m (min_compression_rate)
    powersgd_error_feedback: bool = True
    powersgd_warm_start: bool = True
    powersgd_eps: float = 0.0          # added to each column norm in Gram-Schmidt (orthogonalization_epsilon)

    def __post_init__(self):
        super().__post_init__()
        one_of("exchange", self.exchange, EXCHANGES)
        if self.exchange == "ring":
            one_of("push_codec", self.push_codec, RING_CODECS)
        elif self.powersgd_rank:
            raise ValueError(f"exchange={self.exchange!r} is not allowed with powersgd_rank={self.powersgd_rank}: "
                             "PowerSGD's factors are all-reduced, so it must be 'ring'")
        if self.pull_codec != "fp32":
            raise ValueError(f"pull_codec={self.pull_codec!r} is not allowed: all-reduce workers only push "
                             "(around the ring), so it must stay 'fp32'")
        float_in("lr", self.lr, 0.0, 100.0, lo_open=True)
        float_in("momentum", self.momentum, 0.0, 0.999)
        float_in("weight_decay", self.weight_decay, 0.0, 1.0)
        int_in("powersgd_rank", self.powersgd_rank, 0, 1024)
        int_in("powersgd_start", self.powersgd_start, 0)
        float_in("powersgd_min_rate", self.powersgd_min_rate, 0.0, 1e6)
        boolean("powersgd_error_feedback", self.powersgd_error_feedback)
        boolean("powersgd_warm_start", self.powersgd_warm_start)
        float_in("powersgd_eps", self.powersgd_eps, 0.0, 1.0)

    def check_common(self, common) -> None:
        if common.workers < 2:
            raise ValueError(f"workers={common.workers!r} is not allowed: an all-reduce needs workers >= 2")


@register_algorithm("allreduce")
class AllReduceDP(Declared):
    """One synchronous data-parallel run by ring all-reduce; ``step`` does steps 1-3 above."""

    Section = AllReduceSection

    def __init__(self, model: nn.Module, transport: Transport, workers: int, section: AllReduceSection | None = None,
                 seed: int = 0, loss: str = "cross_entropy"):
        section = section or AllReduceSection()
        if workers < 2:
            raise ValueError(f"workers={workers!r} is not allowed: an all-reduce needs workers >= 2")
        self.transport, self.workers, self.section = transport, workers, section
        self.codec = ready(make_codec(section.push_codec))
        set_up_workers(self, model, transport, workers, seed, loss, sends="states",
                       receives=("receive", "push_receive"))
        shapes = {n: tuple(p.shape[1:]) for n, p in self.replicas.params.items()}
        rank = section.powersgd_rank
        self.powersgd = self.declare("powersgd", {
            k: powersgd.PowerSGDState(shapes, rank, section.powersgd_min_rate) for k in self.local_workers}
            if rank else None)
        self.phases = ring_phases("grad", workers) if section.exchange == "ring" else ("grad",)
        if rank:
            self.phases += ring_phases("whole", workers) + ring_phases("p", workers) + ring_phases("q", workers)
        self.roles = {k: "worker" for k in range(workers)}

    @classmethod
    def from_config(cls, model, transport, config, steps_per_epoch: int):
        return cls(model, transport, config.workers, config.section, config.seed, config.loss)

    def step(self, step: int, x: torch.Tensor, y: torch.Tensor) -> StepReport:
        rnd = Round(self.transport, step)
        losses, correct, grads = local_gradients(self.replicas, x, y)           # 1. g_w
        if self.powersgd is not None and step >= self.section.powersgd_start:   # 2. average (PowerSGD)
            mean = self.powersgd_mean(rnd, step, grads)
        elif self.section.exchange == "allgather":                              # 2. average (all-gather)
            mean = allgather_sum(rnd, "grad", {n: g / self.workers for n, g in grads.items()}, self.local_workers,
                                 self.workers, self.codec, self.states, self.receive)
        else:                                                                   # 2. average (all of it)
            mean = self.allreduce_mean(rnd, "grad", grads, list(grads))
        s = self.section
        self.replicas.descend(mean, s.lr, s.momentum, s.weight_decay)           # 3. SGD with the mean
        return rnd.report(losses, correct, y, len(self.local_workers))

    def allreduce_mean(self, rnd: Round, prefix: str, tensors: dict[str, torch.Tensor], names: list[str],
                       divide: bool = True) -> dict[str, torch.Tensor]:
        """The mean (or sum, ``divide=False``) over all workers of ``tensors[name]`` ((L, ...) per
        local worker) for ``names``, by one ring all-reduce of their concatenation."""
        scale = 1.0 / self.workers if divide else 1.0
        buffers = {k: torch.cat([tensors[n][i].reshape(-1) for n in names]).mul_(scale)
                   for i, k in enumerate(self.local_workers)}
        ring_allreduce(rnd, prefix, buffers, self.workers, self.codec, self.states)
        out, offset = {}, 0
        for n in names:
            shape = tensors[n].shape[1:]
            size = shape.numel()
            out[n] = torch.stack([buffers[k][offset:offset + size].view(shape) for k in self.local_workers])
            offset += size
        return out

    def powersgd_mean(self, rnd: Round, step: int, grads: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """Steps 2a-2e: the gradient every worker applies, (L, ...) per tensor."""
        s, local = self.section, self.local_workers
        states = [self.powersgd[k] for k in local]
        first = states[0]
        per = [{n: g[i] for n, g in grads.items()} for i in range(len(local))]
        with rnd.timed("encode"):                                               # 2a. M = g + error
            matrices = [powersgd.accumulate(st, g, s.powersgd_error_feedback) for st, g in zip(states, per)]
            seed = self.seeds.seed("worker", None, "powersgd_q", step)         # the same first Q everywhere
            qs = [powersgd.start_q(st, s.powersgd_warm_start, torch.Generator().manual_seed(seed), s.powersgd_eps)
                  for st in states]
        mean = self.allreduce_mean(rnd, "whole", grads, first.whole) if first.whole else {}  # 2b. sent whole
        if not first.compressed:                                                # nothing worth factoring
            return mean
        with rnd.timed("encode"):                                               # 2c. P = M Q, summed
            ps = {n: torch.stack([m[n] @ q[n] for m, q in zip(matrices, qs)]) for n in first.compressed}
        p_sum = self.allreduce_mean(rnd, "p", ps, first.compressed, divide=False)
        with rnd.timed("encode"):                                               # P^ = orthogonalize(P)
            p_hat = {n: torch.stack([powersgd.orthogonalize(p[i], s.powersgd_eps) for i in range(len(local))])
                     for n, p in p_sum.items()}
            q_local = {n: torch.stack([matrices[i][n].T @ p_hat[n][i] for i in range(len(local))])
                       for n in first.compressed}                               # 2d. Q = M^T P^, averaged
        q_mean = self.allreduce_mean(rnd, "q", q_local, first.compressed)
        with rnd.timed("decode"):                                               # 2e. P^ Q^T; keep the error
            for i, st in enumerate(states):
                approx = powersgd.finish(st, matrices[i], {n: p[i] for n, p in p_hat.items()},
                                         {n: q[i] for n, q in q_mean.items()}, s.powersgd_error_feedback)
                for n, a in approx.items():
                    mean.setdefault(n, torch.empty_like(grads[n]))[i].copy_(a.view(grads[n].shape[1:]))
        return mean

    def global_params(self) -> dict[str, torch.Tensor] | None:
        """Worker 0's parameters (every worker holds the same), on rank 0."""
        if 0 not in self.local_workers:
            return None
        return {n: p[0] for n, p in self.replicas.params.items()}
