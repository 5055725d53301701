"""Min-max quantization and bit packing of 1 to 8 bits in one Triton kernel each way: the
bytes of ``uniform.py``'s host kernels and ``torch_uniform``'s torch operations, with the
tensor read once and the codes written once (the torch operations make a float, an int32
and an int64 tensor and several passes over them on the way).

Where Triton runs (``usable``) these kernels take the work; elsewhere on a device torch's
operations do (``torch_uniform``; the engine's README records what each measured on a GPU).
On the CPU the test suite runs these kernels under Triton's interpreter against the host
kernels.

The arithmetic is ``uniform.py``'s (its docstring gives it): a code is the truncation of
``w * scale + (0.5 - lo * scale)`` in one fused multiply-add where ``|lo| * scale`` is
at most 2^bits, else of ``(w - lo) * scale + 0.5``; a value is ``code * step + lo``, one
fused multiply-add. ``tl.fma`` rounds once, as the host kernels' contracted multiply-add
and torch's ``add(..., alpha=)`` do. The layout is ``bitpack``'s: each group of 8 b-bit codes
is one little-endian word whose first b bytes are the group's bytes (8 bits: one byte
each).

At 8 bits the codes are the bytes the device CRC's words form (``triton_crc.by_words``)
reads, 4 to a word: ``_step_values``, ``_words_of`` and ``_block_done`` are the pieces
``triton_range`` and ``triton_rows`` read a message's codes with as they check it.

Oland & Raj's bin codes (``bin_quantize.py``, ``binquant`` with the raw coder) are
made and packed the same way, in float64 as the host kernels make them (``bin_packed``), and
so are MQGrad's codes over each row's range (``triton_rows.py``).
"""

from __future__ import annotations


import numpy as np
import torch

from . import triton_crc
from .device import put
from .triton_crc import AVAILABLE

# groups of 8 codes per program: on a GPU 256 (compiled for sm_90a, 26 to 32 registers,
# ``benchmarks/kernel_registers.py``); under the interpreter 16 (``triton_crc.INTERPRETING``)
GROUPS = 16 if triton_crc.INTERPRETING else 256


def usable(bits: int, *tensors: torch.Tensor) -> bool:
    """Whether these kernels take the work: Triton present, 1 to 8 bits, and every tensor
    contiguous on one GPU (or on the CPU under Triton's interpreter, ``TRITON_INTERPRET=1``)."""
    return 1 <= bits <= 8 and triton_crc.triton_runs(*tensors)


if AVAILABLE:
    import triton
    import triton.language as tl

    @triton.jit
    def _groups(GROUPS: tl.constexpr):
        """This program's groups of 8 values ``g``, ``j`` and their indices ``at``."""
        g = tl.program_id(0).to(tl.int64) * GROUPS + tl.arange(0, GROUPS)
        j = tl.arange(0, 8)
        return g, j, g[:, None] * 8 + j[None, :]

    @triton.jit
    def _quantize(x, n, lo, scale, offset, out, nbytes, BITS: tl.constexpr, FUSED: tl.constexpr,
                  GROUPS: tl.constexpr):
        g, j, at = _groups(GROUPS)
        w = tl.load(x + at, mask=at < n, other=0.0)
        if FUSED:
            level = tl.fma(w, scale, offset)
        else:
            level = tl.fma(w - lo, scale, 0.5)
        code = tl.where(at < n, level.to(tl.int32), 0)  # truncation; the padding codes are 0
        _store_packed(code, g, j, at, out, n, nbytes, BITS)

    @triton.jit
    def _bin_quantize(x, n, bins, out, nbytes, BITS: tl.constexpr, GROUPS: tl.constexpr):
        """Oland & Raj's bin codes, min(floor((w - lo) * scale), 2^BITS - 1), in float64 one
        IEEE operation at a time as the host kernels compute them (``bins``: lo and scale, as
        float64 on the device, since a scalar argument would be float32), packed."""
        g, j, at = _groups(GROUPS)
        w = tl.load(x + at, mask=at < n, other=0.0).to(tl.float64)
        level = (w - tl.load(bins)) * tl.load(bins + 1)
        code = tl.where(at < n, tl.minimum(level.to(tl.int64), (1 << BITS) - 1).to(tl.int32), 0)  # w >= lo
        _store_packed(code, g, j, at, out, n, nbytes, BITS)

    @triton.jit
    def _load_packed(packed, g, j, at, n, nbytes, BITS: tl.constexpr):
        """The codes of groups ``g`` (``code[group, j]``, int32) from ``bitpack``'s layout."""
        if BITS == 8:
            code = tl.load(packed + at, mask=at < n, other=0).to(tl.int32)
        else:
            src = g[:, None] * BITS + j[None, :]
            byte = tl.load(packed + src, mask=(j[None, :] < BITS) & (src < nbytes), other=0).to(tl.int64)
            word = tl.sum(byte << (8 * j).to(tl.int64)[None, :], axis=1)
            code = ((word[:, None] >> (j * BITS).to(tl.int64)[None, :]) & ((1 << BITS) - 1)).to(tl.int32)
        return code

    @triton.jit
    def _store_packed(code, g, j, at, out, n, nbytes, BITS: tl.constexpr):
        """Groups ``g`` of 8 codes each (``code[group, j]``, at value ``at``) into ``out`` in
        ``bitpack``'s layout."""
        if BITS == 8:
            tl.store(out + at, code.to(tl.uint8), mask=at < n)
        else:
            word = tl.sum(code.to(tl.int64) << (j * BITS).to(tl.int64)[None, :], axis=1)
            byte = ((word[:, None] >> (8 * j).to(tl.int64)[None, :]) & 255).to(tl.uint8)
            to = g[:, None] * BITS + j[None, :]
            tl.store(out + to, byte, mask=(j[None, :] < BITS) & (to < nbytes))

    @triton.jit
    def _dequantize(packed, n, nbytes, lo, step, out, BITS: tl.constexpr, GROUPS: tl.constexpr):
        g, j, at = _groups(GROUPS)
        code = _load_packed(packed, g, j, at, n, nbytes, BITS)
        tl.store(out + at, tl.fma(code.to(tl.float32), step, lo), mask=at < n)


if AVAILABLE:
    from .triton_crc import _settle, _times

    @triton.jit
    def _step_values(k, padw, n, LANES: tl.constexpr, STEPS: tl.constexpr):
        """(value indices [LANES, 4], which are in the tensor) of step k's words in this
        program's block, in the device CRC's words form (``triton_crc.by_words``):
        lane l of a block takes words l, l + LANES, ..., each the 4 codes of 4 values."""
        at = tl.program_id(0).to(tl.int64) * (LANES * STEPS) - padw + k * LANES + tl.arange(0, LANES)
        i = 4 * at[:, None] + tl.arange(0, 4)[None, :]
        return i, (at[:, None] >= 0) & (i < n)

    @triton.jit
    def _words_of(code):
        """Each row's 4 codes (uint32, < 256) as one little-endian word."""
        return tl.sum(code << (8 * tl.arange(0, 4)).to(tl.uint32)[None, :], axis=1)

    @triton.jit
    def _block_done(crc, shifts, out, ones, trailer, crc_scale, LANES: tl.constexpr, FINAL: tl.constexpr,
                    STORE: tl.constexpr, SCALED: tl.constexpr):
        """The lanes' CRCs moved to the block's end and joined, then stored
        (``triton_crc._settle``)."""
        crc = _times(crc, tl.load(shifts + tl.arange(0, LANES)).to(tl.uint32, bitcast=True))
        _settle(tl.xor_sum(tl.reshape(crc, [1, LANES]), axis=1), out, ones, trailer, FINAL, STORE, crc_scale, SCALED)


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


def bin_packed(flat: torch.Tensor, lo: float, scale: float, bits: int, out: torch.Tensor) -> torch.Tensor:
    """``bin_quantize.bin_pack``'s codes (``_bin_quantize``; ``usable`` must hold): ``flat``
    float32, ``scale`` = 2^bits / (hi - lo)."""
    n = flat.numel()
    if n:
        bins = put(torch.tensor([lo, scale], dtype=torch.float64), flat.device)
        _bin_quantize[_grid(n)](flat.reshape(-1), n, bins, out, out.numel(), BITS=bits, GROUPS=GROUPS)
    return out


def dequantize_packed(packed: torch.Tensor, n: int, bits: int, lo: float, step: float,
                      out: torch.Tensor) -> torch.Tensor:
    """``uniform.dequantize_packed`` by ``_dequantize`` (``usable`` must hold)."""
    if n:
        _dequantize[_grid(n)](packed, n, packed.numel(), float(np.float32(lo)), float(np.float32(step)),
                              out.reshape(-1), BITS=bits, GROUPS=GROUPS)
    return out
