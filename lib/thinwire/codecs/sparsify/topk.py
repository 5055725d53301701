"""Exact top-k sparsification: the k entries of largest magnitude, as int32 index + fp32 value.

This is the selection rule behind Slim-DP's core (Sec. 3.3, CoreSelection), EventGraD's
Top-K variant and, with a threshold instead of a count, gradient dropping.
"""

from __future__ import annotations

import math
import time

import torch

from ..base import Codec, expect_part
from ..errors import CorruptMessageError
from ..payload import Payload
from ..state import CodecState


class TopK(Codec):
    """Keep ``k = ceil(ratio * numel)`` entries (at least one) of largest ``|value|``.

    Indices are sent sorted ascending as int32, values as float32; the receiver scatters
    them into zeros. Non-finite input raises ``ValueError``: the magnitude order is
    undefined for NaN.
    """

    name = "topk"
    host_only = False
    codec_id = 3
    carrier = "values"

    def __init__(self, ratio: float = 0.01):
        if not (isinstance(ratio, (int, float)) and not isinstance(ratio, bool) and 0.0 < ratio <= 1.0):
            raise ValueError(f"topk: ratio must be in (0, 1], got {ratio!r}")
        self.ratio = float(ratio)

    def params(self) -> dict:
        return {"ratio": self.ratio}

    def k_for(self, numel: int) -> int:
        return 0 if numel == 0 else min(numel, max(1, math.ceil(self.ratio * numel)))

    def compress(self, flat, state: CodecState, key: str) -> Payload:
        if flat.numel() >= 2**31:
            raise ValueError(f"topk: tensor of {flat.numel()} entries exceeds int32 indexing")
        k = self.k_for(flat.numel())
        t0 = time.perf_counter()
        if k == flat.numel():
            index = torch.arange(k, dtype=torch.int64, device=flat.device)
        else:
            index = torch.topk(flat.abs(), k, sorted=False).indices.sort().values
        state.last.select_seconds = time.perf_counter() - t0
        values = flat[index].to(torch.float32)
        # torch.topk ranks NaN above every number and |Inf| is the largest magnitude, so a
        # tensor holding either has one among the k selected: checking them is enough.
        if k and not bool(torch.isfinite(values).all()):
            raise ValueError(f"topk: tensor {key!r} contains NaN or Inf; cannot rank magnitudes")
        state.last.kept = k
        return Payload(parts={"index": index.to(torch.int32), "values": values})

    def sparse_entries(self, payload: Payload, numel: int, state: CodecState, key: str):
        k = self.k_for(numel)
        index = expect_part(payload, "index", torch.int32, k).long()
        values = payload.parts.get("values")
        if values is None or values.numel() != k:
            raise CorruptMessageError(f"topk: expected {k} values")
        if k and (int(index.min()) < 0 or int(index.max()) >= numel):
            raise CorruptMessageError("topk: index out of range")
        return index, values.to(torch.float32)

    def decompress(self, payload: Payload, numel: int, state: CodecState, key: str, out=None) -> torch.Tensor:
        index, values = self.sparse_entries(payload, numel, state, key)
        out = torch.zeros(numel, dtype=torch.float32, device=values.device) if out is None else out.zero_()
        out[index] = values.to(torch.float32)
        return out
