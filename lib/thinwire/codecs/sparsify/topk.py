"""Exact top-k sparsification: the k entries of largest magnitude, as int32 index + fp32 value.

This is the selection rule behind Slim-DP's core (Sec. 3.3, CoreSelection), EventGraD's
Top-K variant and, with a threshold instead of a count, gradient dropping.

Inside ``wire.deferred_checks`` a decode into ``out`` on the device does not read its
indices' range: they are clamped into the tensor for the scatter (a damaged index cannot
write outside ``out``), and their least and greatest are judged at the block's end (the
values NaN where they fail). The header and checksum are still read as the message is
opened: a keyed send carries its own count, so the layout is not fixed by the tensor.
"""

from __future__ import annotations

import functools
import math
import time

import numpy as np
import torch

from ..base import Codec
from ..registry import register
from ...engine import CorruptMessageError, Payload, deferred, device, dispatch, expect_part, scatter
from ..state import CodecState


@register
class TopK(Codec):
    """Keep ``k = ceil(ratio * numel)`` entries (at least one) of largest ``|value|``.

    Indices are sent sorted ascending as int32, values as float32; the receiver scatters
    them into zeros. Entries tied with the k-th largest magnitude are taken lowest index
    first. The selection is ``engine/kernels/select.py`` (a sampled threshold, an exact count and a
    fix-up; no sort of the tensor). Non-finite input raises ``ValueError``: the magnitude
    order is undefined for NaN.
    """

    name = "topk"
    host_only = False
    decodes_on_device = True
    reads_device_messages = True
    codec_id = 3
    carrier = "values"
    refuses_non_finite = True  # the selection's count pass refuses NaN and Inf
    revision = 1  # 1: ties at the k-th magnitude go to the lowest indices (torch.topk's choice was unspecified)

    def __init__(self, ratio: float = 0.01):
        if not (isinstance(ratio, (int, float)) and not isinstance(ratio, bool) and 0.0 < ratio <= 1.0):
            raise ValueError(f"topk: ratio must be in (0, 1], got {ratio!r}")
        self.ratio = float(ratio)

    def params(self) -> dict:
        return {"ratio": self.ratio}

    def values_per_byte(self) -> float:
        """k = ceil(ratio n) entries, each at least a bit: n <= 8 / ratio per byte."""
        return 8.0 / self.ratio

    def k_for(self, numel: int) -> int:
        return 0 if numel == 0 else min(numel, max(1, math.ceil(self.ratio * numel)))

    def compress(self, flat, state: CodecState, key: str, shape: tuple = ()) -> Payload:
        if flat.numel() >= 2**31:
            raise ValueError(f"topk: tensor of {flat.numel()} entries exceeds int32 indexing")
        k = self.k_for(flat.numel())
        t0 = time.perf_counter()
        index, values, non_finite = dispatch.top_k(flat.to(torch.float32), k)
        if non_finite:
            raise ValueError(f"topk: tensor {key!r} contains NaN or Inf; cannot rank magnitudes")
        state.last.select_seconds = time.perf_counter() - t0
        state.last.kept = k
        return Payload(parts={"index": index, "values": values})

    def compress_decided(self, flat, state: CodecState, key: str, decision, shape: tuple = ()) -> Payload:
        """A keyed send: the entries at ``decision.keys`` (any coordinates a policy chose, e.g.
        where a tensor moved) as (index, value) pairs; the receiver merges them."""
        if decision.keys is None or decision.bits is not None or decision.core is not None:
            return super().compress_decided(flat, state, key, decision, shape)
        if not bool(torch.isfinite(flat).all()):
            raise ValueError(f"topk: tensor {key!r} contains NaN or Inf; cannot send it")
        t0 = time.perf_counter()
        keys = torch.as_tensor(decision.keys).reshape(-1).to(torch.int64).unique()  # sorted, no repeats
        if keys.numel() and (int(keys[0]) < 0 or int(keys[-1]) >= flat.numel()):
            raise ValueError(f"topk: decision keys must be in [0, {flat.numel()}) for tensor {key!r}")
        state.last.select_seconds = time.perf_counter() - t0
        state.last.kept = keys.numel()
        return Payload(parts={"index": keys.to(torch.int32), "values": flat[keys].to(torch.float32)},
                       meta={"count": keys.numel()})

    def sparse_entries(self, payload: Payload, numel: int, state: CodecState, key: str, shape: tuple = ()):
        index, values = _checked(payload, numel, self.k_for(numel))
        return index.long(), values.to(torch.float32)

    def subtract_decoded(self, payload: Payload, numel: int, into: torch.Tensor, state: CodecState,
                         key: str, shape: tuple = ()) -> bool:
        """``into[index] -= values``: the decode is zero at every other index."""
        index, values = _checked(payload, numel, self.k_for(numel))
        scatter.subtract_at(into, index, values.to(torch.float32))
        return True

    def decompress(self, payload: Payload, numel: int, state: CodecState, key: str, out=None, shape: tuple = ()) -> torch.Tensor:
        checks = deferred.active()
        if checks is not None and out is not None and device.on_device(out):
            return self._deferred(checks, payload, numel, out, key)
        index, values = _checked(payload, numel, self.k_for(numel))  # int32: the host scatter takes it as sent
        return scatter.zeros_with(torch.empty(numel, dtype=torch.float32, device=values.device) if out is None else out,
                                  index, values.to(torch.float32))

    def _deferred(self, checks, payload: Payload, numel: int, out: torch.Tensor, key: str) -> torch.Tensor:
        """The entries scattered into ``out`` with their order and range not read: the indices
        clamped into [0, numel) (a damaged index cannot write outside ``out``), and their
        first, last and order judged at the block's end, ``out`` NaN where they fail."""
        index, values = _entries(payload, numel, self.k_for(numel))
        if index.numel():
            checks.corrupt_unless(scatter.facts(index), functools.partial(_sound, numel),
                                  lambda: out.view(torch.uint8).fill_(0xFF), f"{self.spec()} message for {key!r}")
        return scatter.zeros_with(out, index.long().clamp_(0, max(numel - 1, 0)), values.to(torch.float32))


def _entries(payload: Payload, numel: int, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The (int32 index, values) parts of a message of ``k`` entries, or of the count a
    keyed send carries; their range is the caller's to check."""
    k = payload.meta.get("count", k)  # a keyed send says how many it carries
    if not (isinstance(k, int) and 0 <= k <= numel):
        raise CorruptMessageError(f"topk: count {k!r} is not in [0, {numel}]")
    index = expect_part(payload, "index", torch.int32, k)
    values = payload.parts.get("values")
    if values is None or values.numel() != k:
        raise CorruptMessageError(f"topk: expected {k} values")
    return index, values


def _checked(payload: Payload, numel: int, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The (int32 index, values) parts, the indices strictly ascending within [0, numel)."""
    index, values = _entries(payload, numel, k)
    if index.numel() and not scatter.ascending_within(index, numel):
        raise CorruptMessageError(f"topk: indices out of range for {numel} values or not strictly ascending")
    return index, values


def _sound(numel: int, facts: bytes) -> bool:
    """Whether ``scatter.facts`` of an int32 index, as bytes, show it sound."""
    return scatter.sound(numel, np.frombuffer(facts, dtype=np.int32))
