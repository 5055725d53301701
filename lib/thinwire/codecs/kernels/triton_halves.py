"""16-bit float message parts (fp16, bf16) cast to or from float32 and checksummed in the
same pass on a GPU (``triton_crc``'s ``"words"`` form): the values cross memory once each
way, where casting first and then checksumming the part reads it twice. The 16-bit values'
bits are the host kernels' (``kernels/half.py``): rounded to nearest even, NaN as x86's
conversion writes it; ``tests/test_triton_crc.py`` compares them under Triton's interpreter.
"""

from __future__ import annotations

import torch

from . import triton_crc
from .triton_crc import AVAILABLE

HALVES = (torch.float16, torch.bfloat16)

if AVAILABLE:
    import triton
    import triton.language as tl

    from .triton_crc import _mul, _settle, _times

    @triton.jit
    def _narrow(a, BF16: tl.constexpr):
        """float32 to the bits (int16) of the 16-bit float ``kernels/half.py`` makes of it:
        rounded to nearest even, NaN as the host kernels write it. bfloat16: the upper 16
        bits rounded by integer arithmetic, every NaN 0x7FC0. float16: the device's
        conversion (round to nearest even, overflow to infinity, subnormals kept), a NaN
        quieted with the top 10 bits of its payload kept, as x86's F16C conversion does
        (where a GPU's conversion writes one canonical NaN)."""
        bits = a.to(tl.uint32, bitcast=True)
        nan = (bits & 0x7FFFFFFF) > 0x7F800000
        if BF16:
            narrow = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
            narrow = tl.where(nan, 0x7FC0, narrow)
        else:
            narrow = a.to(tl.float16, fp_downcast_rounding="rtne").to(tl.uint16, bitcast=True).to(tl.uint32)
            narrow = tl.where(nan, ((bits >> 16) & 0x8000) | 0x7E00 | ((bits >> 13) & 0x3FF), narrow)
        return narrow.to(tl.uint16).to(tl.int16, bitcast=True)

    @triton.jit
    def _block_halves(src, numel, padw, product, shifts, out, fold, scale, ones, trailer, dst, LANES: tl.constexpr,
                      STEPS: tl.constexpr, FINAL: tl.constexpr, STORE: tl.constexpr, SCALED: tl.constexpr,
                      FOLD: tl.constexpr, WIDEN: tl.constexpr, BF16: tl.constexpr):
        """``"words"`` over a part of 16-bit floats (float16, or bfloat16 with ``BF16``), cast on
        the way: word i of the part holds values 2i and 2i + 1. ``WIDEN``: ``src`` is the
        part (int16 bits) and ``dst`` float32; else ``src`` is float32, rounded to nearest
        even into the part ``dst``. Every access is 16 or 32 bits wide, so the part needs no
        4-byte alignment, and an odd count's last word is padded with zeros as in
        ``_block_words``."""
        block = tl.program_id(0).to(tl.int64)
        lane = tl.arange(0, LANES)
        first = block * (LANES * STEPS) - padw
        crc = tl.zeros([LANES], dtype=tl.uint32)
        for k in tl.static_range(STEPS):
            at = first + k * LANES + lane
            even, odd = 2 * at, 2 * at + 1
            has_even, has_odd = (at >= 0) & (even < numel), (at >= 0) & (odd < numel)
            if WIDEN:
                low = tl.load(src + even, mask=has_even, other=0)
                high = tl.load(src + odd, mask=has_odd, other=0)
                if BF16:
                    tl.store(dst + even, low.to(tl.bfloat16, bitcast=True).to(tl.float32), mask=has_even)
                    tl.store(dst + odd, high.to(tl.bfloat16, bitcast=True).to(tl.float32), mask=has_odd)
                else:
                    tl.store(dst + even, low.to(tl.float16, bitcast=True).to(tl.float32), mask=has_even)
                    tl.store(dst + odd, high.to(tl.float16, bitcast=True).to(tl.float32), mask=has_odd)
            else:
                low = _narrow(tl.load(src + even, mask=has_even, other=0.0), BF16)
                high = _narrow(tl.load(src + odd, mask=has_odd, other=0.0), BF16)
                tl.store(dst + even, low, mask=has_even)
                tl.store(dst + odd, high, mask=has_odd)
            w = low.to(tl.uint16, bitcast=True).to(tl.uint32) | (high.to(tl.uint16, bitcast=True).to(tl.uint32) << 16)
            crc = _mul(crc, product) ^ w
        crc = _times(crc, tl.load(shifts + lane).to(tl.uint32, bitcast=True))
        crc = tl.xor_sum(tl.reshape(crc, [1, LANES]), axis=1)
        _settle(crc, out, fold, ones, trailer, FINAL, STORE, scale, SCALED, FOLD)


def crc32c_cast(source: torch.Tensor, target: torch.Tensor, prefix: bytes = b"",
                trailer: torch.Tensor | None = None, rest: int = 0) -> torch.Tensor:
    """``target.copy_(source)`` between float32 and a 16-bit float (float16 or bfloat16,
    rounded to nearest even), and the CRC-32C of ``prefix`` and the 16-bit values' bytes,
    as ``triton_crc.crc32c_copy`` returns and writes it (``rest`` too): a message part of
    16-bit values written from float32 values, or read into them, and checksummed in the
    same pass (``_block_halves``) with ``triton_crc.KERNEL = "words"``; otherwise cast first
    and then checksummed."""
    if not AVAILABLE:
        raise RuntimeError("triton_halves needs the triton package (it comes with CUDA builds of torch)")
    widen = target.dtype == torch.float32
    half = source if widen else target
    if not ({source.dtype, target.dtype} == {torch.float32, half.dtype} and half.dtype in HALVES
            and source.dim() == target.dim() == 1 and source.numel() == target.numel()
            and source.is_contiguous() and target.is_contiguous() and source.device == target.device):
        raise ValueError(f"source and target must be contiguous 1-d tensors of as many values on one device, one "
                         f"float32 and one of {HALVES}, got {source.dtype} {tuple(source.shape)} on {source.device} "
                         f"and {target.dtype} {tuple(target.shape)} on {target.device}")
    if trailer is not None:
        triton_crc._check(trailer=trailer)
    numel = source.numel()
    n = 2 * numel
    add = triton_crc.after(prefix, n + rest)
    if not numel:
        return triton_crc.empty(source.device, add, trailer)
    if triton_crc.KERNEL != "words":
        target.copy_(source)
        return triton_crc._checksum(half.view(torch.uint8), None, triton_crc.shifted(rest), add, trailer)
    src, dst = (source.view(torch.int16), target) if widen else (source, target.view(torch.int16))
    return triton_crc.by_words(_block_halves, n, source.device, triton_crc.shifted(rest), add, trailer, (src, numel),
                               (dst,), WIDEN=widen, BF16=half.dtype == torch.bfloat16)
