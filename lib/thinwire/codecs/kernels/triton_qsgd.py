"""QSGD (Alistarh et al. 2017, Sec. 3.1, with buckets) of 2 to 8 bits in one Triton kernel
each way: the bytes and values of ``qsgd.py``'s host kernels and ``torch_qsgd``'s torch
operations, with the tensor read once and the codes written once. The torch operations
widen the tensor to float64 and hash int64 counters, several passes over 2n words each.

The default (``KERNEL = "triton"``; ``"torch"`` for torch's operations): ``gpu_bench``'s
``codec_kernels`` and ``device_messages`` parts timed both on an H100 with the same
messages, and 8-bit QSGD's encode + decode went from 0.02 of the add pass to 0.08-0.12
(25M values) and 0.31-0.33 (250M). On the CPU the test suite runs these kernels under
Triton's interpreter against the host kernels.

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

A message's codes can also be written, or read, and checksummed in the same pass
(``quantize_crc``, ``dequantize_crc``), as ``triton_uniform``'s 8-bit codes are: the
kernels take the device CRC's ``"words"`` form (``triton_crc._block_words``), whose step
reads ``WORD_LANES`` consecutive words. At 2, 4 or 8 bits a word holds 16, 8 or 4 whole
codes, so a step holds whole buckets (a bucket of one word up to one step), and the
steps start at the first word (``by_words``'s ``pad_end``); the steps above run on each.
"""

from __future__ import annotations


import numpy as np
import torch

from . import triton_crc
from .triton_crc import AVAILABLE

KERNEL = "triton"       # "triton" (these kernels) or "torch" (torch_qsgd's operations)
KERNELS = ("torch", "triton")
VALUES = 512            # values per program (ROWS buckets of BUCKET, or one larger bucket): one bucket of
                        # 512 over one warp, 16 values per thread (benchmarks/qsgd_variants.py)
WARPS = 1               # warps per program of VALUES values: every thread repeats its program's buckets'
                        # float64 square root and division, so fewer buckets per thread do less of that
BUCKET_MAX = 2048       # the largest bucket these kernels take: a bucket larger than VALUES is one program
                        # of proportionally more warps (16 values per thread kept)
ONE_PASS = False        # codes written and read as the message is checksummed (``quantize_crc``): off, as
                        # gpu_bench part 8 on an H200 at 83961e8 timed it (README: the Triton codec kernels)
FLOAT32_MAX = float(np.finfo(np.float32).max)


def usable(bits: int, bucket: int, *tensors: torch.Tensor) -> bool:
    """Whether these kernels take the work: chosen (``KERNEL``), Triton present, 2 to 8 bits,
    a power-of-two bucket of 8 to ``BUCKET_MAX`` values, and every tensor contiguous on one GPU
    (or on the CPU under Triton's interpreter, ``TRITON_INTERPRET=1``)."""
    if KERNEL not in KERNELS:
        raise ValueError(f"triton_qsgd.KERNEL must be one of {KERNELS}, got {KERNEL!r}")
    return (KERNEL == "triton" and 2 <= bits <= 8 and 8 <= bucket <= BUCKET_MAX and bucket & (bucket - 1) == 0
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


if AVAILABLE:
    from .triton_crc import _mul
    from .triton_uniform import _block_done

    @triton.jit
    def _step_buckets(k, LANES: tl.constexpr, STEPS: tl.constexpr, PER: tl.constexpr, ROWS: tl.constexpr,
                      BUCKET: tl.constexpr):
        """(its first word, its buckets, their values' indices [ROWS, BUCKET]) of step k of this
        program: LANES words of PER codes each from word (program STEPS + k) LANES on."""
        word0 = (tl.program_id(0).to(tl.int64) * STEPS + k) * LANES
        r = word0 * PER // BUCKET + tl.arange(0, ROWS)
        return word0, r, r[:, None] * BUCKET + tl.arange(0, BUCKET)[None, :]

    @triton.jit
    def _quantize_words(x, n, k1, k2, norms, padw, product, shifts, out, fold, crc_scale, ones, trailer, codes, nbytes,
                        LANES: tl.constexpr, STEPS: tl.constexpr, FINAL: tl.constexpr, STORE: tl.constexpr,
                        SCALED: tl.constexpr, FOLD: tl.constexpr, LEVELS: tl.constexpr, BUCKET: tl.constexpr,
                        BITS: tl.constexpr, USE_MAX: tl.constexpr, PER: tl.constexpr, ROWS: tl.constexpr):
        """Steps 1 to 5 in the device CRC's ``"words"`` form (``triton_crc.by_words`` with
        ``pad_end``, so ``padw`` is 0): each step's words hold whole buckets, whose codes are
        packed into them, written and checksummed as they are made."""
        crc = tl.zeros([LANES], dtype=tl.uint32)
        b = tl.arange(0, 4)
        for k in range(STEPS):  # a loop, not unrolled: one step's values held at a time
            word0, r, at = _step_buckets(k, LANES, STEPS, PER, ROWS, BUCKET)
            v = tl.load(x + at, mask=at < n, other=0.0)
            code = tl.reshape(_bucket_codes(v, at, r, n, k1, k2, norms, LEVELS, BUCKET, BITS, USE_MAX), [LANES, PER])
            word = tl.sum(code.to(tl.uint32) << (BITS * tl.arange(0, PER)).to(tl.uint32)[None, :], axis=1)
            to = (word0 + tl.arange(0, LANES))[:, None] * 4 + b[None, :]
            tl.store(codes + to, ((word[:, None] >> (8 * b).to(tl.uint32)[None, :]) & 255).to(tl.uint8),
                     mask=to < nbytes)
            crc = _mul(crc, product) ^ word
        _block_done(crc, shifts, out, fold, ones, trailer, crc_scale, LANES, FINAL, STORE, SCALED, FOLD)

    @triton.jit
    def _dequantize_words(codes, nbytes, n, norms, padw, product, shifts, out, fold, crc_scale, ones, trailer, values,
                          LANES: tl.constexpr, STEPS: tl.constexpr, FINAL: tl.constexpr, STORE: tl.constexpr,
                          SCALED: tl.constexpr, FOLD: tl.constexpr, LEVELS: tl.constexpr, BUCKET: tl.constexpr,
                          BITS: tl.constexpr, PER: tl.constexpr, ROWS: tl.constexpr):
        """Decoding in the ``"words"`` form of ``_quantize_words``: each step's words read,
        checksummed and decoded."""
        crc = tl.zeros([LANES], dtype=tl.uint32)
        b = tl.arange(0, 4)
        for k in range(STEPS):
            word0, r, at = _step_buckets(k, LANES, STEPS, PER, ROWS, BUCKET)
            src = (word0 + tl.arange(0, LANES))[:, None] * 4 + b[None, :]
            byte = tl.load(codes + src, mask=src < nbytes, other=0).to(tl.uint32)
            word = tl.sum(byte << (8 * b).to(tl.uint32)[None, :], axis=1)
            crc = _mul(crc, product) ^ word
            code = (word[:, None] >> (BITS * tl.arange(0, PER)).to(tl.uint32)[None, :]) & ((1 << BITS) - 1)
            norm = tl.load(norms + r, mask=r * BUCKET < n, other=0.0)
            tl.store(values + at, _values(tl.reshape(code.to(tl.int32), [ROWS, BUCKET]), norm, LEVELS), mask=at < n)
        _block_done(crc, shifts, out, fold, ones, trailer, crc_scale, LANES, FINAL, STORE, SCALED, FOLD)


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


def fuses(bits: int, bucket: int) -> bool:
    """Whether the codec takes ``quantize_crc`` and ``dequantize_crc`` for these codes: chosen
    (``ONE_PASS``), 2, 4 or 8 bits (a word holds 32 / bits of them) and a bucket of whole
    words within one step of the device CRC's ``"words"`` form (``usable`` must hold too)."""
    per = 32 // bits
    return ONE_PASS and bits in (2, 4, 8) and per <= bucket <= triton_crc.WORD_LANES * per


def words_constants(bits: int, bucket: int) -> dict:
    """The words kernels' constants, and their warps: as many values per thread at every
    width as 8-bit codes take (``kernel_registers.py``: 4-bit codes over 4 warps took more
    registers than a thread may hold)."""
    per = 32 // bits
    return {"LEVELS": (1 << (bits - 1)) - 1, "BUCKET": bucket, "BITS": bits, "PER": per,
            "ROWS": triton_crc.WORD_LANES * per // bucket, "warps": triton_crc.WORD_WARPS * per // 4}


def quantize_crc(flat: torch.Tensor, bucket: int, use_max: bool, bits: int, key: int, norms: torch.Tensor,
                 codes: torch.Tensor, prefix: bytes = b"", trailer: torch.Tensor | None = None,
                 rest: int = 0) -> torch.Tensor:
    """``quantize_packed`` into ``codes`` (uint8, any alignment) and ``norms``, and the
    CRC-32C of ``prefix`` and the codes (``rest`` as ``triton_crc.crc32c_copy`` takes it), in
    one pass over ``flat`` (``usable`` and ``fuses`` must hold): a message's codes part
    written and checksummed."""
    n, nbytes = flat.numel(), codes.numel()
    add = triton_crc.after(prefix, nbytes + rest)
    if not n:
        return triton_crc.empty(flat.device, add, trailer)
    return triton_crc.by_words(_quantize_words, nbytes, flat.device, triton_crc.shifted(rest), add, trailer,
                               (flat.reshape(-1), n, key & 0xFFFFFFFF, key >> 32, norms), (codes, nbytes),
                               pad_end=True, USE_MAX=use_max, **words_constants(bits, bucket))


def dequantize_crc(codes: torch.Tensor, bucket: int, norms: torch.Tensor, bits: int, out: torch.Tensor,
                   prefix: bytes = b"", rest: int = 0) -> torch.Tensor:
    """``dequantize_packed`` into float32 ``out`` and the CRC-32C of ``prefix`` and the codes
    (``rest`` as ``triton_crc.crc32c_copy`` takes it), in one pass over the codes (``usable``
    and ``fuses`` must hold): a message's codes part read as it is checked. The norms are
    read unchecked; the caller checks them (with the message's CRC)."""
    n, nbytes = out.numel(), codes.numel()
    add = triton_crc.after(prefix, nbytes + rest)
    if not n:
        return triton_crc.empty(codes.device, add, None)
    return triton_crc.by_words(_dequantize_words, nbytes, codes.device, triton_crc.shifted(rest), add, None,
                               (codes, nbytes, n, norms), (out.reshape(-1),), pad_end=True,
                               **words_constants(bits, bucket))
