"""QSGD (Alistarh et al. 2017, Sec. 3.1, with buckets) of 2 to 8 bits in one Triton kernel
each way: the bytes and values of ``qsgd.py``'s host kernels and ``torch_qsgd``'s torch
operations, with the tensor read once and the codes written once. The torch operations
widen the tensor to float64 and hash int64 counters, several passes over 2n words each.

Where Triton runs (``usable``) these kernels take the work; elsewhere on a device torch's
operations do (``torch_qsgd``; the engine's README records what each measured on a GPU).
On the CPU the test suite runs these kernels under Triton's interpreter against the host
kernels.

One program takes ``ROWS`` whole buckets (a bucket of a power-of-two ``BUCKET`` values,
8 to ``BUCKET_MAX``: every group of 8 codes lies in one bucket). The arithmetic is ``torch_qsgd``'s,
step for step (its docstring says why each step is exact or rounded once):

1. the bucket's norm: the float64 sum of squares, its square root (float64 has only the
   correctly rounded square root, ``sqrt.rn.f64``), then float32; or max |v| (plus 0 * v
   summed, NaN where a value is NaN or Inf), stored in the message's norms;
2. the scale s / norm in float64 (``div.rn.f64``, again the only float64 division), at
   most the largest float32, then float32;
3. value i's uniform: ``lowbias32(i + key word 1) ^ key word 2``, its 24 high bits over
   2^24, in uint32 arithmetic;
4. its level: ``|v| scale + u`` in float64 (the product is exact), rounded to float32 and
   truncated, at most s; the code is the level with the sign bit (bit ``bits - 1``) set for
   a negative value;
5. the codes packed as ``bitpack`` packs them: each group of 8 b-bit codes one
   little-endian word whose first b bytes are the group's bytes.

Decoding: step = norm / s (float64, rounded to float32), value = (code & s) * step in
float32, negated where the sign bit is set.
"""

from __future__ import annotations


import numpy as np
import torch

from . import triton_crc
from .triton_crc import AVAILABLE

# values per program (ROWS buckets of BUCKET, or one larger bucket): on a GPU one bucket of 512 over
# one warp, 16 values per thread; under the interpreter 64 (``triton_crc.INTERPRETING``)
VALUES = 64 if triton_crc.INTERPRETING else 512
WARPS = 1               # warps per program of VALUES values: every thread repeats its program's buckets'
                        # float64 square root and division, so fewer buckets per thread do less of that
BUCKET_MAX = 2048       # the largest bucket these kernels take: a bucket larger than VALUES is one program
                        # of proportionally more warps (16 values per thread kept)
FLOAT32_MAX = float(np.finfo(np.float32).max)


def usable(bits: int, bucket: int, *tensors: torch.Tensor) -> bool:
    """Whether these kernels take the work: Triton present, 2 to 8 bits, a power-of-two
    bucket of 8 to ``BUCKET_MAX`` values, and every tensor contiguous on one GPU (or on the
    CPU under Triton's interpreter, ``TRITON_INTERPRET=1``)."""
    return (2 <= bits <= 8 and 8 <= bucket <= BUCKET_MAX and bucket & (bucket - 1) == 0
            and triton_crc.triton_runs(*tensors))


if AVAILABLE:
    import triton
    import triton.language as tl

    @triton.jit
    def _lowbias32(z):
        """Wellons' lowbias32 on uint32 (``qsgd.lowbias32``): products wrap at 2^32."""
        z ^= z >> 16
        z *= tl.full(z.shape, 0x7FEB352D, tl.uint32)
        z ^= z >> 15
        z *= tl.full(z.shape, 0x846CA68B, tl.uint32)
        return z ^ (z >> 16)

    @triton.jit
    def _bucket_codes(v, at, r, n, k1, k2, norms, LEVELS: tl.constexpr, BUCKET: tl.constexpr, BITS: tl.constexpr,
                      USE_MAX: tl.constexpr):
        """Steps 1 to 4 for the buckets ``r`` (the rows of ``v``, its values' indices ``at``):
        their norms stored, their codes (int32, 0 past the end) returned."""
        if USE_MAX:  # step 1
            norm = tl.max(tl.abs(v), axis=1) + tl.sum(v * 0.0, axis=1)
        else:
            w = v.to(tl.float64)
            norm = tl.sqrt(tl.sum(w * w, axis=1)).to(tl.float32)  # float64: sqrt.rn.f64
        tl.store(norms + r, norm, mask=r * BUCKET < n)
        wide = norm.to(tl.float64)  # step 2
        scale = tl.where(wide > 0, tl.minimum(tl.full(wide.shape, LEVELS, tl.float64) / wide,  # div.rn.f64
                                              3.4028234663852886e38), 0.0).to(tl.float32)
        z = _lowbias32((at + k1).to(tl.uint32)) ^ k2.to(tl.uint32)  # step 3
        u = (z >> 8).to(tl.float64) * (1.0 / 16777216.0)  # exact: one conversion, where via float32 took two
        rounded = (tl.abs(v).to(tl.float64) * scale.to(tl.float64)[:, None] + u).to(tl.float32)
        level = tl.minimum(rounded.to(tl.int32), LEVELS)  # step 4
        return tl.where(at < n, level + tl.where(v < 0, 1 << (BITS - 1), 0), 0)

    @triton.jit
    def _values(code, norm, LEVELS: tl.constexpr):
        """Decoding: each row's codes (int32) times its norm's step, the sign bit applied."""
        step = (norm.to(tl.float64) / LEVELS).to(tl.float32)
        value = (code & LEVELS).to(tl.float32) * step[:, None]
        return tl.where(code > LEVELS, -value, value)

    @triton.jit
    def _quantize(x, n, k1, k2, norms, out, nbytes, LEVELS: tl.constexpr, BUCKET: tl.constexpr,
                  ROWS: tl.constexpr, BITS: tl.constexpr, USE_MAX: tl.constexpr):
        r = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
        at = r[:, None] * BUCKET + tl.arange(0, BUCKET)[None, :]
        v = tl.load(x + at, mask=at < n, other=0.0)
        code = _bucket_codes(v, at, r, n, k1, k2, norms, LEVELS, BUCKET, BITS, USE_MAX)
        if BITS == 8:  # step 5
            tl.store(out + at, code.to(tl.uint8), mask=at < n)
        else:
            j = tl.arange(0, 8)
            g = tl.program_id(0).to(tl.int64) * (ROWS * BUCKET // 8) + tl.arange(0, ROWS * BUCKET // 8)
            word = tl.sum(tl.reshape(code, [ROWS * BUCKET // 8, 8]).to(tl.int64) << (j * BITS).to(tl.int64)[None, :],
                          axis=1)
            byte = ((word[:, None] >> (8 * j).to(tl.int64)[None, :]) & 255).to(tl.uint8)
            to = g[:, None] * BITS + j[None, :]
            tl.store(out + to, byte, mask=(j[None, :] < BITS) & (to < nbytes))

    @triton.jit
    def _dequantize(packed, n, nbytes, norms, out, LEVELS: tl.constexpr, BUCKET: tl.constexpr,
                    ROWS: tl.constexpr, BITS: tl.constexpr):
        r = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
        at = r[:, None] * BUCKET + tl.arange(0, BUCKET)[None, :]
        norm = tl.load(norms + r, mask=r * BUCKET < n, other=0.0)
        if BITS == 8:
            code = tl.load(packed + at, mask=at < n, other=0).to(tl.int32)
        else:
            j = tl.arange(0, 8)
            g = tl.program_id(0).to(tl.int64) * (ROWS * BUCKET // 8) + tl.arange(0, ROWS * BUCKET // 8)
            src = g[:, None] * BITS + j[None, :]
            byte = tl.load(packed + src, mask=(j[None, :] < BITS) & (src < nbytes), other=0).to(tl.int64)
            word = tl.sum(byte << (8 * j).to(tl.int64)[None, :], axis=1)
            code = ((word[:, None] >> (j * BITS).to(tl.int64)[None, :]) & ((1 << BITS) - 1)).to(tl.int32)
            code = tl.reshape(code, [ROWS, BUCKET])
        tl.store(out + at, _values(code, norm, LEVELS), mask=at < n)


def _launch(n: int, bucket: int) -> tuple[tuple[int], int, int]:
    """The grid, the buckets per program and the warps per program for ``n`` values."""
    rows = max(1, VALUES // bucket)
    return (max(1, -(-n // (rows * bucket))),), rows, WARPS * max(1, bucket // VALUES)


def quantize_packed(flat: torch.Tensor, bucket: int, use_max: bool, bits: int, key: int, norms: torch.Tensor,
                    out: torch.Tensor) -> torch.Tensor:
    """``qsgd.quantize_packed``'s codes of float32 ``flat`` into ``out`` (uint8) and its
    buckets' norms into ``norms`` (float32), by ``_quantize`` (``usable`` must hold)."""
    n = flat.numel()
    if n:
        grid, rows, warps = _launch(n, bucket)
        _quantize[grid](flat.reshape(-1), n, key & 0xFFFFFFFF, key >> 32, norms, out, out.numel(),
                        LEVELS=(1 << (bits - 1)) - 1, BUCKET=bucket, ROWS=rows, BITS=bits, USE_MAX=use_max,
                        num_warps=warps)
    return out


def dequantize_packed(packed: torch.Tensor, bucket: int, norms: torch.Tensor, bits: int,
                      out: torch.Tensor) -> torch.Tensor:
    """``qsgd.dequantize_packed`` into float32 ``out`` from the codes and the buckets' norms
    (checked finite and non-negative by the caller), by ``_dequantize``."""
    n = out.numel()
    if n:
        grid, rows, warps = _launch(n, bucket)
        _dequantize[grid](packed, n, packed.numel(), norms, out.reshape(-1), LEVELS=(1 << (bits - 1)) - 1,
                          BUCKET=bucket, ROWS=rows, BITS=bits, num_warps=warps)
    return out
