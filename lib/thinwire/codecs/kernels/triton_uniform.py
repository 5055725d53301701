"""Min-max quantization and bit packing of 1 to 8 bits in one Triton kernel each way: the
bytes of ``uniform.py``'s host kernels and ``torch_uniform``'s torch operations, with the
tensor read once and the codes written once (the torch operations make a float, an int32
and an int64 tensor and several passes over them on the way).

Opt-in (``KERNEL = "triton"``; ``"torch"`` is the default) until a GPU has measured it:
``gpu_bench``'s ``codec_kernels`` part times both on the same tensors. On the CPU the
test suite runs these kernels under Triton's interpreter against the host kernels.

The arithmetic is ``uniform.py``'s (its docstring gives it): a code is the truncation of
``w * scale + (0.5 - lo * scale)`` in one fused multiply-add where ``|lo| * scale`` is
at most 2^bits, else of ``(w - lo) * scale + 0.5``; a value is ``code * step + lo``, one
fused multiply-add. ``tl.fma`` rounds once, as the host kernels' contracted multiply-add
and torch's ``add(..., alpha=)`` do. The layout is ``bitpack``'s: each group of 8 b-bit codes
is one little-endian word whose first b bytes are the group's bytes (8 bits: one byte
each).
"""

from __future__ import annotations

import os

import numpy as np
import torch

from .triton_crc import AVAILABLE

KERNEL = "torch"        # "torch" (torch_uniform's operations) or "triton" (these kernels)
KERNELS = ("torch", "triton")
GROUPS = 256            # groups of 8 codes per program: compiled for sm_90, 48 to 70 registers
                        # (benchmarks/kernel_registers.py)


def usable(bits: int, *tensors: torch.Tensor) -> bool:
    """Whether these kernels take the work: chosen (``KERNEL``), Triton present, 1 to 8
    bits, and every tensor contiguous on one GPU (or on the CPU under Triton's
    interpreter, ``TRITON_INTERPRET=1``)."""
    if KERNEL not in KERNELS:
        raise ValueError(f"triton_uniform.KERNEL must be one of {KERNELS}, got {KERNEL!r}")
    devices = {t.device for t in tensors}
    where = next(iter(devices)).type if len(devices) == 1 else None
    return (KERNEL == "triton" and AVAILABLE and 1 <= bits <= 8 and all(t.is_contiguous() for t in tensors)
            and (where not in (None, "cpu") or (where == "cpu" and os.environ.get("TRITON_INTERPRET") == "1")))


if AVAILABLE:
    import triton
    import triton.language as tl

    @triton.jit
    def _quantize(x, n, lo, scale, offset, out, nbytes, BITS: tl.constexpr, FUSED: tl.constexpr,
                  GROUPS: tl.constexpr):
        g = tl.program_id(0).to(tl.int64) * GROUPS + tl.arange(0, GROUPS)
        j = tl.arange(0, 8)
        at = g[:, None] * 8 + j[None, :]
        w = tl.load(x + at, mask=at < n, other=0.0)
        if FUSED:
            level = tl.fma(w, scale, offset)
        else:
            level = tl.fma(w - lo, scale, 0.5)
        code = tl.where(at < n, level.to(tl.int32), 0)  # truncation; the padding codes are 0
        if BITS == 8:
            tl.store(out + at, code.to(tl.uint8), mask=at < n)
        else:
            word = tl.sum(code.to(tl.int64) << (j * BITS).to(tl.int64)[None, :], axis=1)
            byte = ((word[:, None] >> (8 * j).to(tl.int64)[None, :]) & 255).to(tl.uint8)
            to = g[:, None] * BITS + j[None, :]
            tl.store(out + to, byte, mask=(j[None, :] < BITS) & (to < nbytes))

    @triton.jit
    def _dequantize(packed, n, nbytes, lo, step, out, BITS: tl.constexpr, GROUPS: tl.constexpr):
        g = tl.program_id(0).to(tl.int64) * GROUPS + tl.arange(0, GROUPS)
        j = tl.arange(0, 8)
        at = g[:, None] * 8 + j[None, :]
        if BITS == 8:
            code = tl.load(packed + at, mask=at < n, other=0).to(tl.int32)
        else:
            src = g[:, None] * BITS + j[None, :]
            byte = tl.load(packed + src, mask=(j[None, :] < BITS) & (src < nbytes), other=0).to(tl.int64)
            word = tl.sum(byte << (8 * j).to(tl.int64)[None, :], axis=1)
            code = ((word[:, None] >> (j * BITS).to(tl.int64)[None, :]) & ((1 << BITS) - 1)).to(tl.int32)
        tl.store(out + at, tl.fma(code.to(tl.float32), step, lo), mask=at < n)


def _grid(n: int) -> tuple[int]:
    return (max(1, -(-n // (8 * GROUPS))),)


def quantize_packed(flat: torch.Tensor, lo: float, scale: float, bits: int, out: torch.Tensor) -> torch.Tensor:
    """``uniform.quantize_packed`` by ``_quantize`` (``usable`` must hold): ``flat`` float32."""
    n = flat.numel()
    if n:
        fused = abs(lo) * scale <= (1 << bits)
        _quantize[_grid(n)](flat.reshape(-1), n, float(np.float32(lo)), float(np.float32(scale)),
                            float(np.float32(0.5 - lo * scale)), out, out.numel(), BITS=bits, FUSED=fused,
                            GROUPS=GROUPS)
    return out


def dequantize_packed(packed: torch.Tensor, n: int, bits: int, lo: float, step: float,
                      out: torch.Tensor) -> torch.Tensor:
    """``uniform.dequantize_packed`` by ``_dequantize`` (``usable`` must hold)."""
    if n:
        _dequantize[_grid(n)](packed, n, packed.numel(), float(np.float32(lo)), float(np.float32(step)),
                              out.reshape(-1), BITS=bits, GROUPS=GROUPS)
    return out
