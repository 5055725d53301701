"""Min-max uniform b-bit quantization with real bit packing (b = 1..16).

The scheme Oland & Raj (Alg. 1) and MQGrad build on, and Slim-DP's Quant-DP baseline:
1. lo, hi = min(x), max(x)                         (sent as two float32 values)
2. code  = floor((x - lo) * (2**b - 1) / (hi - lo) + 1/2)   (nearest level, in [0, 2**b - 1])
3. pack the codes densely (``kernels/bitpack.py``)
4. decode: x' = lo + code * (hi - lo) / (2**b - 1);  |x - x'| <= (hi - lo) / (2 * (2**b - 1))
A constant tensor (hi == lo) decodes exactly. NaN or Inf raises ``ValueError``.

Step 2 runs over cache-sized blocks (the float intermediate never leaves the cache) and,
for b = 8, writes the codes straight into the message buffer.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ..kernels import bitpack
from ..kernels.extrema import extrema
from ..base import Codec, expect_part
from ..errors import CorruptMessageError
from ..payload import PartWriter, Payload
from ..state import CodecState

BLOCK = 1 << 18  # floats per encode block: 1 MiB of scratch, fits in L2
DECODE_BLOCK = 1 << 20
FLOAT32_MAX = 3.4e38


def quantize_codes(flat: torch.Tensor, lo: float, scale: float, bits: int,
                   out: torch.Tensor | None = None) -> torch.Tensor:
    """Nearest-level codes of ``flat`` (uint8 for bits <= 8, else int32), into ``out``."""
    n = flat.numel()
    dtype = torch.uint8 if bits <= 8 else torch.int32
    out = torch.empty(n, dtype=dtype) if out is None else out
    if scale > FLOAT32_MAX / 2:  # a range of a few subnormals: float32 cannot hold the scale
        levels = (1 << bits) - 1
        exact = ((flat.to(torch.float64) - lo) * scale + 0.5).floor_().clamp_(0, levels)
        return out.copy_(exact)
    codes = out.numpy()
    scratch = torch.empty(min(n, BLOCK), dtype=torch.float32)
    half = torch.tensor(0.5, dtype=torch.float32)
    src = flat if flat.dtype == torch.float32 else flat.to(torch.float32)
    buf = scratch.numpy()
    # x * scale + (1/2 - lo * scale) in one pass is as exact as (x - lo) * scale + 1/2
    # while |lo| * scale stays within the code range (data around zero, like gradients);
    # far from zero, subtract lo first.
    fused = abs(lo) * scale <= (1 << bits)
    offset = torch.tensor(0.5 - lo * scale, dtype=torch.float32)
    for start in range(0, n, BLOCK):
        stop = min(n, start + BLOCK)
        tmp = scratch[: stop - start]
        if fused:
            torch.add(offset, src[start:stop], alpha=scale, out=tmp)
        else:
            torch.sub(src[start:stop], lo, out=tmp)
            torch.add(half, tmp, alpha=scale, out=tmp)
        # tmp in [1/2 - eps, 2**bits - 1/2 + eps]: truncation is floor, never out of range.
        np.copyto(codes[start:stop], buf[: stop - start], casting="unsafe")
    return out


def value_range(flat: torch.Tensor, key: str = "") -> tuple[float, float]:
    """(min, max) of a tensor (step 1; Oland & Raj Alg. 1 line 3); ``ValueError`` for NaN or Inf."""
    if flat.numel() == 0:
        return 0.0, 0.0
    lo, hi = extrema(flat)
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise ValueError(f"tensor {key!r} contains NaN or Inf (min {lo}, max {hi}): it cannot be quantized")
    return lo, hi


def dequantize_codes(codes: torch.Tensor, lo: float, step: float, out: torch.Tensor | None = None) -> torch.Tensor:
    """lo + code * step, in blocks so each float block is rescaled while in cache."""
    n = codes.numel()
    out = torch.empty(n, dtype=torch.float32) if out is None else out
    lo_t = torch.tensor(lo, dtype=torch.float32)
    for start in range(0, n, DECODE_BLOCK):
        block = out[start:start + DECODE_BLOCK]
        block.copy_(codes[start:start + DECODE_BLOCK])
        torch.add(lo_t, block, alpha=step, out=block)
    return out


class Quantize(Codec):
    """Min-max uniform quantizer to ``bits`` bits per value."""

    name = "quantize"
    codec_id = 4
    carrier = None  # its codes are bit-packed bytes: no codec compresses them further

    def __init__(self, bits: int = 8):
        if not (isinstance(bits, int) and not isinstance(bits, bool) and 1 <= bits <= 16):
            raise ValueError(f"quantize: bits must be an int in 1..16, got {bits!r}")
        self.bits = bits

    def params(self) -> dict:
        return {"bits": self.bits}

    def compress(self, flat, state: CodecState, key: str) -> Payload:
        n = flat.numel()
        state.last.bits = self.bits
        if n == 0:
            return Payload(parts={"codes": torch.empty(0, dtype=torch.uint8)}, meta={"lo": 0.0, "hi": 0.0})
        lo, hi = value_range(flat, key)
        levels = (1 << self.bits) - 1
        scale = levels / (hi - lo) if hi > lo else 0.0
        meta = {"lo": lo, "hi": hi}
        if self.bits == 8:  # the codes are the packed bytes: write them into the message
            writer = PartWriter(torch.uint8, n, lambda view: quantize_codes(flat, lo, scale, 8, out=view))
            return Payload(parts={"codes": writer}, meta=meta)
        codes = quantize_codes(flat, lo, scale, self.bits)
        return Payload(parts={"codes": bitpack.pack(codes, self.bits)}, meta=meta)

    def decompress(self, payload: Payload, numel: int, state: CodecState, key: str, out=None) -> torch.Tensor:
        lo, hi = float(payload.meta["lo"]), float(payload.meta["hi"])
        packed = expect_part(payload, "codes", torch.uint8, bitpack.packed_bytes(numel, self.bits))
        if hi < lo:
            raise CorruptMessageError(f"quantize: hi {hi} < lo {lo}")
        codes = bitpack.unpack(packed, numel, self.bits)
        return dequantize_codes(codes, lo, (hi - lo) / ((1 << self.bits) - 1), out=out)
