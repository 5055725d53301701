"""Min-max quantization whose range never leaves the device: the bytes of
``quantize/minmax.py``'s messages, with lo and hi found, sent and read back on the GPU, so
that an encode or a decode of 1 to 8 bits makes no host read (``Quantize.compress_deferred``
and ``decompress``; ``wire.deferred_checks`` judges what must be judged at its block's end).

1. ``_extrema_blocks`` and ``_extrema_final``: min and max as ``extrema.py`` finds them, as
   integer maxima over the float32 bit patterns (int32 and, via xor 2^31, uint32 orders),
   so that a zero's sign and every bit of lo and hi equal the host's; they go to ``ends``
   (two int32, the message's meta). NaN and Inf come out as they are; the caller refuses them.
2. ``_codes``: ``triton_uniform._quantize``'s codes, the scale and offset made from ``ends``
   in each program as ``Quantize.compress`` makes them on the host (float64, one IEEE
   operation at a time, ``enable_fp_fusion=False``; the one ``tl.fma`` is explicit), or
   ``minmax.exact_codes`` for a range of a few subnormals. With ``BINS``, Oland & Raj's bin
   codes (``bin_quantize.py``) with the scale 2^bits / (hi - lo).
3. ``_values``: ``triton_uniform._dequantize``'s values, the step made from lo and hi read
   from the message's own header bytes, as ``Quantize.decompress`` makes it; with ``BINS``,
   each bin's centre as ``bin_unpack_centres`` makes it.
4. ``_quantize_ranged`` and ``_dequantize_ranged`` pack and unpack 1 to 8 bits; at 8 bits
   ``_dequantize_ranged_words`` reads the codes as it checksums them (``triton_crc.by_words``;
   the header's part of the CRC is the host's with zeros for lo and hi, and
   ``triton_affine.with_words`` adds their bytes), so a received message is read once.

float64 division on the GPU is IEEE's correctly rounded one (PTX ``div.rn.f64``), so the
scale and the step are the host's to the bit. The CPU tests run these kernels under
Triton's interpreter against the host path.
"""

from __future__ import annotations

import torch

from . import triton_crc, triton_uniform
from .triton_crc import AVAILABLE

BLOCK = 1024          # values per step of an extrema program
STEPS = 16            # steps per extrema program: 16,384 values each
FINAL_BLOCK = 1024    # partial maxima per step of the final program
FLOAT32_MAX = 3.4e38  # a scale or a step above half of this leaves float32 (``minmax`` uses these too)
FLOAT32_TINY = 1.1754943508222875e-38  # the smallest normal float32


if AVAILABLE:
    import triton
    import triton.language as tl

    from .triton_uniform import _groups

    WIDE_SCALE = tl.constexpr(FLOAT32_MAX / 2)  # a scale or step beyond this takes float64
    TINY = tl.constexpr(FLOAT32_TINY)

    @triton.jit
    def _extrema_blocks(x, n, partial, BLOCK: tl.constexpr, STEPS: tl.constexpr):
        """This program's (int32 max, int32 min, max of bits ^ 2^31) into ``partial``."""
        base = tl.program_id(0).to(tl.int64) * (BLOCK * STEPS)
        imax = tl.full([BLOCK], -2147483648, tl.int32)
        imin = tl.full([BLOCK], 2147483647, tl.int32)
        umax = tl.full([BLOCK], -2147483648, tl.int32)
        for k in range(STEPS):
            at = base + k * BLOCK + tl.arange(0, BLOCK)
            inside = at < n
            bits = tl.load(x + at, mask=inside, other=0.0).to(tl.int32, bitcast=True)
            imax = tl.where(inside, tl.maximum(imax, bits), imax)
            imin = tl.where(inside, tl.minimum(imin, bits), imin)
            umax = tl.where(inside, tl.maximum(umax, bits ^ -2147483648), umax)
        out = partial + 3 * tl.program_id(0)
        tl.store(out, tl.max(imax, axis=0))
        tl.store(out + 1, tl.min(imin, axis=0))
        tl.store(out + 2, tl.max(umax, axis=0))

    @triton.jit
    def _extrema_final(partial, programs, ends, FINAL_BLOCK: tl.constexpr):
        """lo's and hi's bits from the programs' partial maxima (``extrema._ends``)."""
        imax = tl.full([FINAL_BLOCK], -2147483648, tl.int32)
        imin = tl.full([FINAL_BLOCK], 2147483647, tl.int32)
        umax = tl.full([FINAL_BLOCK], -2147483648, tl.int32)
        for start in range(0, programs, FINAL_BLOCK):
            p = start + tl.arange(0, FINAL_BLOCK)
            inside = p < programs
            imax = tl.maximum(imax, tl.load(partial + 3 * p, mask=inside, other=-2147483648))
            imin = tl.minimum(imin, tl.load(partial + 3 * p + 1, mask=inside, other=2147483647))
            umax = tl.maximum(umax, tl.load(partial + 3 * p + 2, mask=inside, other=-2147483648))
        top = tl.max(imax, axis=0)
        bottom = tl.min(imin, axis=0)
        unsigned_top = tl.max(umax, axis=0) ^ -2147483648  # the uint32 view's maximum, as bits
        negative = unsigned_top < 0  # some value has its sign bit set
        lo = tl.where(negative, unsigned_top, bottom)  # the most negative, else the least
        hi = tl.where(top >= 0, top, bottom)  # the largest non-negative, else (all negative) the least magnitude
        tl.store(ends, lo)
        tl.store(ends + 1, hi)

    @triton.jit
    def _float_at(where):
        """The float32 whose 4 little-endian bytes start at ``where`` (a uint8 pointer)."""
        byte = tl.load(where + tl.arange(0, 4)).to(tl.uint32)
        return tl.sum(byte << (8 * tl.arange(0, 4)).to(tl.uint32), axis=0).to(tl.float32, bitcast=True)

    @triton.jit
    def _range_at(lo_bytes, hi_bytes):
        """(lo as float32, lo and hi as float64) from their bytes."""
        lo32 = _float_at(lo_bytes)
        return lo32, lo32.to(tl.float64), _float_at(hi_bytes).to(tl.float64)

    @triton.jit
    def _codes(w, lo_bytes, hi_bytes, BITS: tl.constexpr, BINS: tl.constexpr):
        """The int32 codes of float32 values ``w`` over the range at ``lo_bytes``, ``hi_bytes``:
        ``Quantize.compress``'s, or with ``BINS`` ``bin_quantize.bin_pack``'s (min(floor((w -
        lo) * scale), 2^BITS - 1), scale = 2^BITS / (hi - lo) in float64, 0 for an empty range)."""
        lo32, lo, hi = _range_at(lo_bytes, hi_bytes)
        if BINS:
            scale = tl.where(hi > lo, (1 << BITS) / tl.maximum(hi - lo, 1e-300), 0.0)
            level = (w.to(tl.float64) - lo) * scale  # >= 0: lo is the tensor's least
            code = tl.minimum(level.to(tl.int64), (1 << BITS) - 1).to(tl.int32)
        else:
            levels = (1 << BITS) - 1
            scale = tl.where(hi > lo, levels / tl.maximum(hi - lo, 1e-300), 0.0)  # the guard keeps 0 / 0 away
            if scale > WIDE_SCALE:  # a few subnormals apart: the codes of ``exact_codes``, in float64
                exact = (w.to(tl.float64) - lo) * scale + 0.5
                code = tl.minimum(tl.maximum(exact, 0.0), levels).to(tl.int32)
            elif tl.abs(lo) * scale <= (1 << BITS):  # the fused form, for ranges near zero
                code = tl.fma(w, scale.to(tl.float32), (0.5 - lo * scale).to(tl.float32)).to(tl.int32)
            else:
                code = tl.fma(w - lo32, scale.to(tl.float32), 0.5).to(tl.int32)
        return code

    @triton.jit
    def _values(code, lo_bytes, hi_bytes, BITS: tl.constexpr, BINS: tl.constexpr):
        """The float32 values of int32 ``code``, lo and hi read from their bytes:
        ``Quantize.decompress``'s (the step in float64, a step beyond float32's range or
        subnormal rescaled in float64), or with ``BINS`` each bin's centre as
        ``bin_quantize.bin_unpack_centres`` makes it (code * step + (lo + step / 2) in one
        float32 fused multiply-add, step = (hi - lo) / 2^BITS and the offset made in float64;
        a step below float32's normals makes the centres in float64; lo everywhere for an empty
        range)."""
        lo32, lo, hi = _range_at(lo_bytes, hi_bytes)
        if BINS:
            step = (hi - lo) / (1 << BITS)
            if (step > 0) & (step < TINY):  # bins narrower than float32's normals: centres in float64
                value = (lo + (code.to(tl.float64) + 0.5) * step).to(tl.float32)
            else:
                value = tl.fma(code.to(tl.float32), step.to(tl.float32), (lo + 0.5 * step).to(tl.float32))
            value = tl.where(hi > lo, value, lo32)
        else:
            step = (hi - lo) / ((1 << BITS) - 1)
            if (step > WIDE_SCALE) | ((step > 0) & (step < TINY)):  # rescaled in float64
                value = (lo + code.to(tl.float64) * step).to(tl.float32)
            else:
                value = tl.fma(code.to(tl.float32), step.to(tl.float32), lo32)
        return value

    @triton.jit
    def _quantize_ranged(x, n, lo_bytes, hi_bytes, out, nbytes, BITS: tl.constexpr, GROUPS: tl.constexpr,
                         BINS: tl.constexpr):
        """``_codes`` of ``x``, packed into ``out``."""
        g, j, at = _groups(GROUPS)
        w = tl.load(x + at, mask=at < n, other=0.0)
        code = tl.where(at < n, _codes(w, lo_bytes, hi_bytes, BITS, BINS), 0)
        triton_uniform._store_packed(code, g, j, at, out, n, nbytes, BITS)

    @triton.jit
    def _dequantize_ranged(packed, n, nbytes, lo_bytes, hi_bytes, out, BITS: tl.constexpr, GROUPS: tl.constexpr,
                           BINS: tl.constexpr):
        """``_values`` of the packed codes, into ``out``."""
        g, j, at = _groups(GROUPS)
        code = triton_uniform._load_packed(packed, g, j, at, n, nbytes, BITS)
        tl.store(out + at, _values(code, lo_bytes, hi_bytes, BITS, BINS), mask=at < n)


if AVAILABLE:
    from .triton_crc import _mul
    from .triton_uniform import _block_done, _step_values, _words_of

    @triton.jit
    def _dequantize_ranged_words(codes, n, lo_bytes, hi_bytes, padw, product, shifts, out, crc_scale, ones,
                                 trailer, values, LANES: tl.constexpr, STEPS: tl.constexpr, FINAL: tl.constexpr,
                                 STORE: tl.constexpr, SCALED: tl.constexpr, BINS: tl.constexpr):
        """8-bit codes read, checksummed and turned into ``_values`` in one pass."""
        crc = tl.zeros([LANES], dtype=tl.uint32)
        for k in range(STEPS):
            i, inside = _step_values(k, padw, n, LANES, STEPS)
            code = tl.load(codes + i, mask=inside, other=0).to(tl.uint32)
            crc = _mul(crc, product) ^ _words_of(code)
            tl.store(values + i, _values(code.to(tl.int32), lo_bytes, hi_bytes, 8, BINS), mask=inside)
        _block_done(crc, shifts, out, ones, trailer, crc_scale, LANES, FINAL, STORE, SCALED)


def extrema(flat: torch.Tensor) -> torch.Tensor:
    """lo's and hi's float32 bits (two int32 on ``flat``'s device, 8 bytes) of a non-empty
    float32 tensor, as ``extrema.extrema`` finds them (``triton_uniform.usable`` must hold)."""
    n = flat.numel()
    programs = -(-n // (BLOCK * STEPS))
    partial = torch.empty(3 * programs, dtype=torch.int32, device=flat.device)
    ends = torch.empty(2, dtype=torch.int32, device=flat.device)
    _extrema_blocks[(programs,)](flat.reshape(-1), n, partial, BLOCK=BLOCK, STEPS=STEPS)
    _extrema_final[(1,)](partial, programs, ends, FINAL_BLOCK=FINAL_BLOCK)
    return ends


def quantize_packed(flat: torch.Tensor, lo_bytes: torch.Tensor, hi_bytes: torch.Tensor, bits: int,
                    out: torch.Tensor, bins: bool = False) -> torch.Tensor:
    """``uniform.quantize_packed``'s codes of float32 ``flat`` into ``out`` (uint8), over the
    range whose float32 bytes are ``lo_bytes`` and ``hi_bytes`` (4 uint8 each, on the
    device), with the scale ``Quantize.compress`` makes of it; ``bins``: the codes of
    ``bin_quantize.bin_pack`` (``triton_uniform.usable`` must hold)."""
    n = flat.numel()
    if n:
        _quantize_ranged[_grid(n)](flat.reshape(-1), n, lo_bytes, hi_bytes, out, out.numel(), BITS=bits,
                                   GROUPS=triton_uniform.GROUPS, BINS=bins, enable_fp_fusion=False)
    return out


def dequantize_packed(packed: torch.Tensor, n: int, bits: int, lo_bytes: torch.Tensor, hi_bytes: torch.Tensor,
                      out: torch.Tensor, bins: bool = False) -> torch.Tensor:
    """``Quantize.decompress``'s ``n`` values of ``packed`` into float32 ``out``, lo and hi
    read from their float32 bytes on the device; ``bins``: ``bin_quantize.bin_unpack_centres``'s
    (``triton_uniform.usable`` must hold)."""
    if n:
        _dequantize_ranged[_grid(n)](packed, n, packed.numel(), lo_bytes, hi_bytes, out.reshape(-1), BITS=bits,
                                     GROUPS=triton_uniform.GROUPS, BINS=bins, enable_fp_fusion=False)
    return out


def dequantize8_crc(codes: torch.Tensor, lo_bytes: torch.Tensor, hi_bytes: torch.Tensor, out: torch.Tensor,
                    prefix: bytes, bins: bool = False) -> torch.Tensor:
    """``dequantize_packed`` of non-empty 8-bit ``codes`` into float32 ``out`` and the CRC-32C
    of ``prefix`` and the codes, in one pass (``bins``: ``bin_quantize``'s bin centres)."""
    n = codes.numel()
    if not n:
        return triton_crc.empty(codes.device, triton_crc.after(prefix, 0), None)
    return triton_crc.by_words(_dequantize_ranged_words, n, codes.device, triton_crc.ONE, triton_crc.after(prefix, n),
                               None, (codes, n, lo_bytes, hi_bytes), (out.reshape(-1),), BINS=bins,
                               enable_fp_fusion=False)


def _grid(n: int) -> tuple[int]:
    return (max(1, -(-n // (8 * triton_uniform.GROUPS))),)
