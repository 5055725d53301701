"""MQGrad's codes over each row's range (``quantize/column_minmax.py``, ``colquant``, Cui et
al. 2018 Sec. 4.1) in one Triton kernel each way: the bytes and values of ``rows.py``'s host
kernels, in float64 one IEEE operation at a time as they compute them.

- ``row_packed``: code = min(floor((w - lo_r) * scale_r), 2^bits - 1) (w >= lo_r, the row's
  least), packed as ``bitpack`` packs them (``triton_uniform._store_packed``);
- ``row_values``: value = float32(lo_r + (code + 1/2) * step_r), launched without fused
  multiply-adds (``enable_fp_fusion=False``, which ``kernel_registers`` checks in the
  compiled code), so that the product and the sum round once each, as on the host.

``bins`` holds each row's two float64 numbers, row after row (``torch_bins.row_scales``:
lo and scale; ``row_steps``: lo and step). A value's row is its index over the row length
``cols``, in 32-bit integers unless the tensor is ``WIDE`` (2^31 values or more).

At 8 bits a received message's codes can also be read and checksummed in the same pass
(``row_values_crc``): the codes are the bytes the device CRC's words form
(``triton_crc.by_words``) reads, 4 to a word, so the kernel is that loop with the row
codes in it. The codes are the first of a message's three parts (the rows' lo and hi
follow: ``rest``), so their CRC is moved past those bytes, whose own CRC is added apart
(``wire/tensor_message.py``).
"""

from __future__ import annotations

import torch

from . import triton_crc, triton_uniform
from .triton_crc import AVAILABLE

if AVAILABLE:
    import triton
    import triton.language as tl

    from .triton_crc import _mul
    from .triton_uniform import _block_done, _groups, _load_packed, _step_values, _store_packed, _words_of

    @triton.jit
    def _row_of(at, inside, cols, WIDE: tl.constexpr):
        """The row of each value index ``at`` (0 where not ``inside``)."""
        if WIDE:
            return tl.where(inside, at // cols, 0)
        return tl.where(inside, at.to(tl.int32) // cols.to(tl.int32), 0)

    @triton.jit
    def _codes(w, bins, row, BITS: tl.constexpr):
        """Each float32 ``w``'s code in its row's bins (int32)."""
        level = (w.to(tl.float64) - tl.load(bins + 2 * row)) * tl.load(bins + 2 * row + 1)  # >= 0
        return tl.minimum(level.to(tl.int64), (1 << BITS) - 1).to(tl.int32)

    @triton.jit
    def _centres(code, bins, row):
        """Each code's bin centre in its row (float32)."""
        centre = (code.to(tl.float64) + 0.5) * tl.load(bins + 2 * row + 1)
        return (tl.load(bins + 2 * row) + centre).to(tl.float32)

    @triton.jit
    def _row_quantize(x, n, cols, bins, out, nbytes, BITS: tl.constexpr, GROUPS: tl.constexpr,
                      WIDE: tl.constexpr):
        g, j, at = _groups(GROUPS)
        inside = at < n
        w = tl.load(x + at, mask=inside, other=0.0)
        code = tl.where(inside, _codes(w, bins, _row_of(at, inside, cols, WIDE), BITS), 0)
        _store_packed(code, g, j, at, out, n, nbytes, BITS)

    @triton.jit
    def _row_dequantize(packed, n, cols, bins, out, nbytes, BITS: tl.constexpr, GROUPS: tl.constexpr,
                        WIDE: tl.constexpr):
        g, j, at = _groups(GROUPS)
        inside = at < n
        code = _load_packed(packed, g, j, at, n, nbytes, BITS)
        tl.store(out + at, _centres(code, bins, _row_of(at, inside, cols, WIDE)), mask=inside)

    @triton.jit
    def _row_dequantize_words(codes, n, cols, bins, padw, product, shifts, out, crc_scale, ones, trailer,
                              values, LANES: tl.constexpr, STEPS: tl.constexpr, FINAL: tl.constexpr,
                              STORE: tl.constexpr, SCALED: tl.constexpr, WIDE: tl.constexpr):
        """8-bit row codes read, checksummed and turned into their bins' centres in one pass."""
        crc = tl.zeros([LANES], dtype=tl.uint32)
        for k in range(STEPS):
            i, inside = _step_values(k, padw, n, LANES, STEPS)
            code = tl.load(codes + i, mask=inside, other=0).to(tl.uint32)
            crc = _mul(crc, product) ^ _words_of(code)
            tl.store(values + i, _centres(code.to(tl.int32), bins, _row_of(i, inside, cols, WIDE)), mask=inside)
        _block_done(crc, shifts, out, ones, trailer, crc_scale, LANES, FINAL, STORE, SCALED)


def _wide(n: int, block: int) -> bool:
    """Whether value indices up to ``n`` plus a program's ``block`` leave 32 bits."""
    return n + block >= 1 << 31


def row_packed(rows: torch.Tensor, bins: torch.Tensor, bits: int, out: torch.Tensor) -> torch.Tensor:
    """``column_minmax``'s codes of the float32 matrix ``rows`` packed into ``out``
    (``_row_quantize``; ``triton_uniform.usable`` must hold): ``bins`` float64 [rows, 2],
    each row's lo and scale (``torch_bins.row_scales``)."""
    n, groups = rows.numel(), triton_uniform.GROUPS
    if n:
        _row_quantize[triton_uniform._grid(n)](rows.reshape(-1), n, rows.shape[1], bins, out, out.numel(), BITS=bits,
                                               GROUPS=groups, WIDE=_wide(n, 8 * groups))
    return out


def row_values(packed: torch.Tensor, cols: int, bins: torch.Tensor, bits: int, out: torch.Tensor) -> torch.Tensor:
    """``column_minmax``'s values of ``out.numel()`` packed codes in rows of ``cols`` into
    ``out`` (float32; ``_row_dequantize``; ``triton_uniform.usable`` must hold): ``bins``
    float64 [rows, 2], each row's lo and step (``torch_bins.row_steps``)."""
    n, groups = out.numel(), triton_uniform.GROUPS
    if n:
        _row_dequantize[triton_uniform._grid(n)](packed, n, cols, bins, out.reshape(-1), packed.numel(), BITS=bits,
                                                 GROUPS=groups, WIDE=_wide(n, 8 * groups), enable_fp_fusion=False)
    return out


def row_values_crc(codes: torch.Tensor, cols: int, bins: torch.Tensor, out: torch.Tensor, prefix: bytes = b"",
                   rest: int = 0) -> torch.Tensor:
    """``row_values`` of 8-bit ``codes`` in rows of ``cols`` into float32 ``out`` and the
    CRC-32C of ``prefix``, the codes and ``rest`` zero bytes, in one pass: a message's first
    part read as it is checked. ``bins`` (each row's lo and step) are read unchecked; the
    caller judges the ranges they come from."""
    n = out.numel()
    add = triton_crc.after(prefix, n + rest)
    if not n:
        return triton_crc.empty(codes.device, add, None)
    return triton_crc.by_words(_row_dequantize_words, n, codes.device, triton_crc.shifted(rest), add, None,
                               (codes, n, cols, bins), (out.reshape(-1),),
                               WIDE=_wide(n, 4 * triton_crc.WORD_LANES * triton_crc.WORD_STEPS),
                               enable_fp_fusion=False)
