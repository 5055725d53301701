"""Dense bit packing of b-bit unsigned codes (b = 1..16) into bytes.

Layout for b <= 8: one little-endian, LSB-first bitstream, code i in bits [i b, (i + 1) b),
so n codes take ``ceil(n b / 8)`` bytes: b = 8 is the codes themselves, b in {1, 2, 4}
puts 8/b codes in a byte, the first in the low bits. For b > 8: the low byte of every
code (n bytes), then the high b - 8 bits of every code as a (b - 8)-bit stream.

The kernels are compiled (numba) and run in parallel over chunks of ``CHUNK`` codes.
A chunk starts on a 64-bit word of each stream (``CHUNK`` is a multiple of 64), so it is
packed on its own: groups of 8 codes make one word of 8 b bits, the groups go through a
64-bit accumulator into a per-chunk scratch, and the scratch is copied out as bytes.
The output may be any byte buffer (a view into a message, say). ``stream_chunk`` and
``low_bytes`` are reused by the fused quantize-and-pack kernels (``bin_quantize.bin_pack``).
"""

from __future__ import annotations

import numpy as np
import torch
from numba import njit, prange

CHUNK = 1 << 14  # codes per parallel chunk (a multiple of 64)
MAX_BITS = 16


def packed_bytes(n: int, bits: int) -> int:
    if bits <= 8:
        return (n * bits + 7) // 8
    return n + packed_bytes(n, bits - 8)


def check_bits(name: str, bits) -> int:
    """``bits`` if it is a code width this module packs, else a ``ValueError`` naming ``name``."""
    if not (isinstance(bits, int) and not isinstance(bits, bool) and 1 <= bits <= MAX_BITS):
        raise ValueError(f"{name}={bits!r} is not allowed: {name} must be an int in [1, {MAX_BITS}]")
    return bits


@njit(nogil=True, cache=True)
def _group_words(codes, shift, bits, out):
    """out[g] = sum over j < 8 of (codes[8 g + j] >> shift) << j bits (a short last group)."""
    width = np.uint64(bits)
    down = np.uint64(shift)
    full = codes.size // 8
    for g in range(full):
        b = g * 8
        word = np.uint64(codes[b]) >> down
        up = np.uint64(0)
        for j in range(1, 8):
            up += width
            word |= (np.uint64(codes[b + j]) >> down) << up
        out[g] = word
    if full * 8 < codes.size:
        word = np.uint64(0)
        up = np.uint64(0)
        for j in range(full * 8, codes.size):
            word |= (np.uint64(codes[j]) >> down) << up
            up += width
        out[full] = word
        full += 1
    return full


@njit(nogil=True, cache=True)
def stream_chunk(codes, shift, bits, out):
    """(codes >> shift), each < 2**bits <= 2**8, as a bitstream into the bytes of ``out``."""
    groups = np.empty(CHUNK // 8, np.uint64)
    words = np.empty(CHUNK // 64 * 8 + 1, np.uint64)
    count = _group_words(codes, shift, bits, groups)
    group_bits = np.uint64(8 * bits)
    acc = np.uint64(0)
    filled = np.uint64(0)
    w = 0
    for g in range(count):
        word = groups[g]
        acc |= word << filled
        filled += group_bits
        if filled >= 64:
            words[w] = acc
            w += 1
            filled -= np.uint64(64)
            acc = (word >> (group_bits - filled)) if filled > 0 else np.uint64(0)
    if filled > 0:
        words[w] = acc
    src = words.view(np.uint8)
    for k in range((codes.size * bits + 7) // 8):
        out[k] = src[k]


@njit(nogil=True, cache=True)
def low_bytes(codes, out):
    for i in range(codes.size):
        out[i] = np.uint8(codes[i] & 0xFF)


@njit(nogil=True, cache=True)
def _unstream_chunk(packed, bits, out):
    """The first ``out.size`` ``bits``-bit codes of the bitstream in ``packed``."""
    words = np.zeros(CHUNK // 64 * 8 + 2, np.uint64)
    dst = words.view(np.uint8)
    for k in range((out.size * bits + 7) // 8):
        dst[k] = packed[k]
    mask = np.uint64((1 << bits) - 1)
    width = np.uint64(bits)
    for i in range(out.size):
        p = np.uint64(i) * width
        w = p >> np.uint64(6)
        off = p & np.uint64(63)
        v = words[w] >> off
        if off + width > 64:
            v |= words[w + 1] << (np.uint64(64) - off)
        out[i] = v & mask


# Two kernels, not one with a branch on bits inside the chunk loop: compiled together,
# the branch costs the wide case 1.7x (measured).
@njit(parallel=True, nogil=True, cache=True)
def _pack_narrow(codes, bits, out):
    n = codes.size
    for c in prange((n + CHUNK - 1) // CHUNK):
        start = c * CHUNK
        stream_chunk(codes[start:min(n, start + CHUNK)], 0, bits, out[start // 8 * bits:])


@njit(parallel=True, nogil=True, cache=True)
def _pack_wide(codes, bits, out):
    n = codes.size
    for c in prange((n + CHUNK - 1) // CHUNK):
        start = c * CHUNK
        chunk = codes[start:min(n, start + CHUNK)]
        low_bytes(chunk, out[start:start + chunk.size])
        stream_chunk(chunk, 8, bits - 8, out[n + start // 8 * (bits - 8):])


@njit(parallel=True, nogil=True, cache=True)
def _unpack(packed, bits, out):
    n = out.size
    for c in prange((n + CHUNK - 1) // CHUNK):
        start = c * CHUNK
        chunk = out[start:min(n, start + CHUNK)]
        if bits <= 8:
            _unstream_chunk(packed[start // 8 * bits:], bits, chunk)
        else:
            _unstream_chunk(packed[n + start // 8 * (bits - 8):], bits - 8, chunk)
            for i in range(chunk.size):
                chunk[i] = packed[start + i] | (chunk[i] << 8)


def pack(codes: torch.Tensor, bits: int, out: torch.Tensor | None = None) -> torch.Tensor:
    """Pack integer codes in [0, 2**bits) into ``packed_bytes`` bytes (a uint8 tensor,
    written into ``out`` when given). Codes may be any integer dtype."""
    check_bits("bits", bits)
    out = torch.empty(packed_bytes(codes.numel(), bits), dtype=torch.uint8) if out is None else out
    if bits == 8:  # the codes are the bytes
        return out.copy_(codes.reshape(-1))
    src = codes.contiguous().numpy()
    if src.dtype not in (np.uint8, np.uint16, np.int32):
        src = src.astype(np.int32)
    if src.size:
        (_pack_narrow if bits <= 8 else _pack_wide)(src, bits, out.numpy())
    return out


def unpack(packed: torch.Tensor, n: int, bits: int) -> torch.Tensor:
    """Inverse of ``pack``: uint8 codes for bits <= 8, int32 codes above."""
    check_bits("bits", bits)
    if packed.numel() != packed_bytes(n, bits):
        raise ValueError(f"expected {packed_bytes(n, bits)} packed bytes for {n} {bits}-bit codes, got {packed.numel()}")
    if bits == 8:  # the bytes are the codes
        return packed
    out = torch.empty(n, dtype=torch.uint8 if bits <= 8 else torch.int32)
    if n:
        _unpack(packed.contiguous().numpy(), bits, out.numpy())
    return out
