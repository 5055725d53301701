"""Uniform (min-max) quantization as compiled kernels: nearest-level codes written
packed in one pass, and packed codes turned back into values in one pass (steps 2-4 of
``quantize/minmax.py``).

Each call is one parallel region over chunks of ``bitpack.CHUNK`` values; a chunk's codes
are computed and packed (or unpacked and rescaled) while they are in cache. One region per
call matters on busy machines: a loop of many short multi-threaded operations waits at a
barrier after each one, and when the thread pool shares its cores with other processes,
every wait can cost a scheduler time slice (the quantizer that issued ~100 such operations
per call ran 4x slower with two competing processes than alone; ``benchmarks/load_bench.py``
measures the slowdown of every codec under that load).

Arithmetic is float32 with multiply-add fused (``fastmath={"contract"}``):

    code  = int(offset + scale * w)      offset = 1/2 - lo * scale   (``fused``, w near zero)
    code  = int(1/2 + scale * (w - lo))                              (otherwise)
    value = lo + step * code

``int`` truncates, which is floor for the non-negative argument. The codes and values are
the ones torch's ``add(offset, w, alpha=scale)`` gives, which also fuses the multiply-add.
"""

from __future__ import annotations

import numpy as np
import torch
from numba import literally, njit, prange

from . import bitpack, device, stream

CHUNK = bitpack.CHUNK


@njit(nogil=True, cache=True, fastmath={"contract"})
def _levels_chunk(w, offset, scale, lo, fused, out):
    half = np.float32(0.5)
    if fused:
        for i in range(w.size):
            out[i] = np.int32(offset + scale * w[i])
    else:
        for i in range(w.size):
            out[i] = np.int32(half + scale * (w[i] - lo))


@njit(nogil=True, cache=True, fastmath={"contract"})
def _values_chunk(codes, lo, step, out):
    for i in range(codes.size):
        out[i] = lo + step * np.float32(codes[i])


@njit(parallel=True, nogil=True, cache=True)
def _quantize_packed(bits, args):
    literally(bits)
    w, offset, scale, lo, fused, out = args
    n = w.size
    for c in prange((n + CHUNK - 1) // CHUNK):
        start = c * CHUNK
        stop = min(n, start + CHUNK)
        if bits == 8:  # the codes are the bytes
            _levels_chunk(w[start:stop], offset, scale, lo, fused, out[start:stop])
        else:
            codes = np.empty(stop - start, np.uint16)
            _levels_chunk(w[start:stop], offset, scale, lo, fused, codes)
            bitpack.store_chunk(codes, n, start, bits, out)


@njit(nogil=True, cache=True)
def _values_out(codes, lo, step, out, start, raw, address):
    """Chunk ``start`` of the values: into ``out`` directly, or (``raw``: ``out``'s bytes,
    a large output) built in cache and streamed out (``stream.stream_out``)."""
    if raw.size == 0:
        _values_chunk(codes, lo, step, out[start:start + codes.size])
        return
    values = np.empty(codes.size, np.float32)
    _values_chunk(codes, lo, step, values)
    stream.stream_out(values.view(np.uint8), raw, 4 * start, address)


@njit(parallel=True, nogil=True, cache=True)
def _dequantize_packed(bits, args):
    literally(bits)
    packed, lo, step, out, raw, address = args
    n = out.size
    for c in prange((n + CHUNK - 1) // CHUNK):
        start = c * CHUNK
        stop = min(n, start + CHUNK)
        if bits == 8:
            _values_out(packed[start:stop], lo, step, out, start, raw, address)
        else:
            _values_out(bitpack.load_chunk(packed, n, start, stop, bits), lo, step, out, start, raw, address)


@njit(parallel=True, nogil=True, cache=True)
def _dequantize(codes, lo, step, out):
    n = codes.size
    for c in prange((n + CHUNK - 1) // CHUNK):
        start = c * CHUNK
        stop = min(n, start + CHUNK)
        _values_chunk(codes[start:stop], lo, step, out[start:stop])


# ``bits`` as a compile-time constant, one kernel per width (as in ``bitpack``).
_quantize_narrow = bitpack.width_table(_quantize_packed, bitpack.NARROW)
_quantize_wide = bitpack.width_table(_quantize_packed, bitpack.WIDE)
_dequantize_narrow = bitpack.width_table(_dequantize_packed, bitpack.NARROW)
_dequantize_wide = bitpack.width_table(_dequantize_packed, bitpack.WIDE)


def float32_numpy(t: torch.Tensor) -> np.ndarray:
    return (t if t.dtype == torch.float32 else t.to(torch.float32)).reshape(-1).contiguous().numpy()


def quantize_packed(flat: torch.Tensor, lo: float, scale: float, bits: int, out: torch.Tensor) -> torch.Tensor:
    """The ``bits``-bit nearest-level codes of ``flat`` (``round((w - lo) * scale)``, each in
    [0, 2^bits - 1]) in ``bitpack``'s layout, written into the uint8 tensor ``out``
    (``bitpack.packed_bytes(n, bits)`` bytes, any byte view). ``scale`` must fit float32."""
    bitpack.check_bits("bits", bits)
    n = flat.numel()
    if out.numel() != bitpack.packed_bytes(n, bits):
        raise ValueError(f"out holds {out.numel()} bytes, {n} {bits}-bit codes need {bitpack.packed_bytes(n, bits)}")
    if device.on_device(flat):
        from . import torch_uniform
        return torch_uniform.quantize_packed(flat, lo, scale, bits, out)
    if n:
        fused = abs(lo) * scale <= (1 << bits)
        args = (float32_numpy(flat), np.float32(0.5 - lo * scale), np.float32(scale), np.float32(lo), fused,
                out.numpy())
        (_quantize_narrow if bits <= 8 else _quantize_wide)(bits, args)
    return out


def dequantize_packed(packed: torch.Tensor, n: int, bits: int, lo: float, step: float,
                      out: torch.Tensor | None = None) -> torch.Tensor:
    """``lo + step * code`` (float32) for the ``n`` packed ``bits``-bit codes in ``packed``."""
    bitpack.check_bits("bits", bits)
    if packed.numel() != bitpack.packed_bytes(n, bits):
        raise ValueError(f"expected {bitpack.packed_bytes(n, bits)} packed bytes for {n} {bits}-bit codes, "
                         f"got {packed.numel()}")
    out = torch.empty(n, dtype=torch.float32) if out is None else out
    if device.on_device(out):  # decoded where the receiver wants the values (a GPU)
        from . import torch_uniform
        return torch_uniform.dequantize_packed(packed, n, bits, lo, step, out)
    if n:
        values = out.numpy()
        args = (packed.contiguous().numpy(), np.float32(lo), np.float32(step), values, stream.destination(values, built=True),
                values.ctypes.data)
        (_dequantize_narrow if bits <= 8 else _dequantize_wide)(bits, args)
    return out


def dequantize(codes: np.ndarray, lo: float, step: float, out: torch.Tensor | None = None) -> torch.Tensor:
    """``lo + step * code`` (float32) for unpacked integer codes."""
    out = torch.empty(codes.size, dtype=torch.float32) if out is None else out
    if codes.size:
        _dequantize(np.ascontiguousarray(codes), np.float32(lo), np.float32(step), out.numpy())
    return out
