"""Uniform (min-max) quantization as compiled kernels: nearest-level codes written
packed in one pass, and packed codes turned back into values in one pass (steps 2-4 of
``quantize/minmax.py``).

Each call is one parallel region over chunks of ``bitpack.CHUNK`` values; a chunk's codes
are computed and packed (or unpacked and rescaled) while they are in cache. One region, as
on a busy machine every barrier between short multi-threaded operations can cost a time
slice (``benchmarks/load_bench.py`` measures each codec under load).

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

from . import bitpack, crc, stream

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


@njit(nogil=True, cache=True)
def _quantize_packed(bits, args):
    literally(bits)
    w, offset, scale, lo, fused, out, crcs = args
    _quantize_parallel(bits, w, offset, scale, lo, fused, out, crcs)


@njit(nogil=True, cache=True, inline="always")
def chunk_bytes(start, stop, n, bits, size):
    """The packed bytes of codes ``start .. stop`` (1 to 8 bits: one plane; ``start`` a
    multiple of 8) -> (first, end)."""
    return start * bits // 8, size if stop == n else stop * bits // 8


@njit(parallel=True, nogil=True, cache=True)
def _quantize_parallel(bits, w, offset, scale, lo, fused, out, crcs):
    """The arrays come as arguments, not in a tuple (as in ``qsgd.py``). With ``crcs``, each
    chunk's bytes are checksummed while cached (1 to 8 bits)."""
    literally(bits)
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
        if bits <= 8 and crcs.size:
            first, end = chunk_bytes(start, stop, n, bits, out.size)
            crcs[c] = crc.crc32c(out[first:end])


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


@njit(nogil=True, cache=True)
def _dequantize_packed(bits, args):
    literally(bits)
    packed, lo, step, out, raw, address, crcs = args
    _dequantize_parallel(bits, packed, lo, step, out, raw, address, crcs)


@njit(parallel=True, nogil=True, cache=True)
def _dequantize_parallel(bits, packed, lo, step, out, raw, address, crcs):
    """With ``crcs``, each chunk's packed bytes are checksummed as they are read (1 to 8
    bits), before they are turned into values."""
    literally(bits)
    n = out.size
    for c in prange((n + CHUNK - 1) // CHUNK):
        start = c * CHUNK
        stop = min(n, start + CHUNK)
        if bits <= 8 and crcs.size:
            first, end = chunk_bytes(start, stop, n, bits, packed.size)
            crcs[c] = crc.crc32c(packed[first:end])
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
_quantize_width = bitpack.width_table(_quantize_packed)
_dequantize_width = bitpack.width_table(_dequantize_packed)


def float32_numpy(t: torch.Tensor) -> np.ndarray:
    return (t if t.dtype == torch.float32 else t.to(torch.float32)).reshape(-1).contiguous().numpy()


def chunk_crcs(n: int, bits: int, checksum: bool) -> np.ndarray:
    """One CRC slot per chunk of ``CHUNK`` codes where a kernel checksums its chunks' bytes
    (``checksum``, 1 to 8 bits, the CRC instruction), else none."""
    return np.empty(-(-n // CHUNK) if checksum and crc.HARDWARE and bitpack.one_plane(bits) and n else 0, np.uint32)


def joined(crcs: np.ndarray, bits: int, nbytes: int) -> int | None:
    """The CRC-32C of the ``nbytes`` packed bytes from their chunks', or None where none
    were taken."""
    if not crcs.size:
        return None
    return crc.join(crcs, CHUNK * bits // 8, nbytes - (crcs.size - 1) * (CHUNK * bits // 8))


def check_packed(n: int, bits: int, out: torch.Tensor) -> None:
    """``out`` holds the packed codes of ``n`` ``bits``-bit values, or ``ValueError``."""
    bitpack.check_bits("bits", bits)
    if out.numel() != bitpack.packed_bytes(n, bits):
        raise ValueError(f"out holds {out.numel()} bytes, {n} {bits}-bit codes need {bitpack.packed_bytes(n, bits)}")


def check_codes(packed: torch.Tensor, n: int, bits: int) -> None:
    """``packed`` holds the codes of ``n`` ``bits``-bit values, or ``ValueError``."""
    bitpack.check_bits("bits", bits)
    if packed.numel() != bitpack.packed_bytes(n, bits):
        raise ValueError(f"expected {bitpack.packed_bytes(n, bits)} packed bytes for {n} {bits}-bit codes, "
                         f"got {packed.numel()}")


def quantize_packed(flat: torch.Tensor, lo: float, scale: float, bits: int, out: torch.Tensor,
                    checksum: bool = False) -> int | None:
    """The ``bits``-bit nearest-level codes of ``flat`` (``round((w - lo) * scale)``, each in
    [0, 2^bits - 1]) in ``bitpack``'s layout, written into the uint8 tensor ``out``
    (``bitpack.packed_bytes(n, bits)`` bytes, any byte view). ``scale`` must fit float32.
    With ``checksum``, returns the CRC-32C of ``out``'s bytes where the host kernel took it
    chunk by chunk as it wrote them (1 to 8 bits, the CRC instruction), else None."""
    n = flat.numel()
    check_packed(n, bits, out)
    crcs = chunk_crcs(n, bits, checksum)
    if n:
        fused = abs(lo) * scale <= (1 << bits)
        args = (float32_numpy(flat), np.float32(0.5 - lo * scale), np.float32(scale), np.float32(lo), fused,
                out.numpy(), crcs)
        _quantize_width(bits, args)
    return joined(crcs, bits, out.numel())


def dequantize_packed(packed: torch.Tensor, n: int, bits: int, lo: float, step: float,
                      out: torch.Tensor | None = None) -> torch.Tensor:
    """``lo + step * code`` (float32) for the ``n`` packed ``bits``-bit codes in ``packed``."""
    check_codes(packed, n, bits)
    out = torch.empty(n, dtype=torch.float32) if out is None else out
    dequantize_host(packed.contiguous().numpy(), bits, lo, step, out.numpy())
    return out


def dequantize_host(packed: np.ndarray, bits: int, lo: float, step: float, out: np.ndarray,
                    checksum: bool = False) -> int | None:
    """``dequantize_packed`` of host arrays: ``packed`` (uint8, the codes of ``out.size``
    values) into the float32 ``out``; with ``checksum``, the CRC-32C of ``packed`` taken
    chunk by chunk as it is read (1 to 8 bits, the CRC instruction), else None (a message
    verified in the same pass: ``wire.read_host_part``)."""
    crcs = chunk_crcs(out.size, bits, checksum)
    if out.size:
        args = (packed, np.float32(lo), np.float32(step), out, stream.destination(out, built=True), out.ctypes.data,
                crcs)
        _dequantize_width(bits, args)
    return joined(crcs, bits, packed.size)


def dequantize(codes: np.ndarray, lo: float, step: float, out: torch.Tensor | None = None) -> torch.Tensor:
    """``lo + step * code`` (float32) for unpacked integer codes."""
    out = torch.empty(codes.size, dtype=torch.float32) if out is None else out
    if codes.size:
        _dequantize(np.ascontiguousarray(codes), np.float32(lo), np.float32(step), out.numpy())
    return out
