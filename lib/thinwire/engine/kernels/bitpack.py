"""Dense bit packing of b-bit unsigned codes (b = 1..16) into bytes.

Layout for b <= 8: one little-endian, LSB-first bitstream, code i in bits [i b, (i + 1) b),
so n codes take ``ceil(n b / 8)`` bytes: b = 8 is the codes themselves, b in {1, 2, 4}
puts 8/b codes in a byte, the first in the low bits. For b > 8: the low byte of every
code (n bytes), then the high b - 8 bits of every code as a (b - 8)-bit stream.

The kernels are compiled (numba) and run in parallel over chunks of ``CHUNK`` codes.
A chunk starts on a whole group of 8 codes, and 8 b-bit codes fill exactly b bytes, so
every chunk and every group is packed on its own: a group's codes are gathered into one
64-bit word that is stored byte by byte. The output may be any byte buffer (a view into
a message, say). Each width gets its own compiled kernel (``bits`` is a compile-time
constant there). The fused quantize-and-pack kernels reuse the chunk helpers
(``store_chunk``, ``load_chunk``: ``uniform``, ``qsgd``; ``stream_chunk``: ``bin_quantize``).
"""

from __future__ import annotations

import numpy as np
import torch
from numba import literally, njit, prange

from . import team
from .jit_cache import closure_kernel, keyed

CHUNK = 1 << 14  # codes per parallel chunk (a multiple of 64)
MAX_BITS = 16


def packed_bytes(n: int, bits: int) -> int:
    if bits <= 8:
        return (n * bits + 7) // 8
    return n + packed_bytes(n, bits - 8)


def one_plane(bits: int) -> bool:
    """Whether ``bits``-bit codes pack as one bitstream (1 to 8 bits), whose bytes a kernel
    checksums chunk by chunk as it writes or reads them (``uniform``, ``qsgd``); wider codes
    pack as two planes, their low bytes and their high bits."""
    return bits <= 8


def check_bits(name: str, bits) -> int:
    """``bits`` if it is a code width this module packs, else a ``ValueError`` naming ``name``."""
    if not (isinstance(bits, int) and not isinstance(bits, bool) and 1 <= bits <= MAX_BITS):
        raise ValueError(f"{name}={bits!r} is not allowed: {name} must be an int in [1, {MAX_BITS}]")
    return bits


@njit(nogil=True, cache=True)
def stream_chunk(codes, bits, out):
    """The bitstream part of ``bits``-bit codes (the whole code for b <= 8, the high b - 8
    bits above) into the bytes of ``out``.

    Eight codes fill exactly ``width`` bytes: each group is gathered into one 64-bit word
    and stored byte by byte, so ``out`` may be any byte view. Called with a literal
    ``bits``, shift and width are constants and the group loops unroll."""
    shift = 0 if bits <= 8 else 8
    width = bits - shift
    down = np.uint64(shift)
    n = codes.size
    full = n // 8
    for g in range(full):
        word = np.uint64(0)
        for j in range(8):
            word |= (np.uint64(codes[8 * g + j]) >> down) << np.uint64(j * width)
        for j in range(width):
            out[g * width + j] = np.uint8((word >> np.uint64(8 * j)) & np.uint64(0xFF))
    if full * 8 < n:  # a short last group
        word = np.uint64(0)
        for j in range(n - full * 8):
            word |= (np.uint64(codes[8 * full + j]) >> down) << np.uint64(j * width)
        for j in range((n * width + 7) // 8 - full * width):
            out[full * width + j] = np.uint8((word >> np.uint64(8 * j)) & np.uint64(0xFF))


@njit(nogil=True, cache=True)
def low_bytes(codes, out):
    for i in range(codes.size):
        out[i] = np.uint8(codes[i] & 0xFF)


@njit(nogil=True, cache=True)
def unstream_chunk(packed, bits, out):
    """Inverse of ``stream_chunk``: the first ``out.size`` stream parts in ``packed``
    (for b > 8, shifted up and added to the low bytes already in ``out``)."""
    shift = 0 if bits <= 8 else 8
    width = bits - shift
    mask = np.uint64((1 << width) - 1)
    n = out.size
    full = n // 8
    for g in range(full):
        word = np.uint64(0)
        for j in range(width):
            word |= np.uint64(packed[g * width + j]) << np.uint64(8 * j)
        for j in range(8):
            part = (word >> np.uint64(j * width)) & mask
            out[8 * g + j] = part if shift == 0 else out[8 * g + j] | (part << np.uint64(shift))
    if full * 8 < n:
        word = np.uint64(0)
        for j in range((n * width + 7) // 8 - full * width):
            word |= np.uint64(packed[full * width + j]) << np.uint64(8 * j)
        for j in range(n - full * 8):
            part = (word >> np.uint64(j * width)) & mask
            out[8 * full + j] = part if shift == 0 else out[8 * full + j] | (part << np.uint64(shift))


@njit(nogil=True, cache=True)
def store_chunk(codes, n, start, bits, out):
    """Codes start..start + codes.size of an n-code message into the packed bytes ``out``
    (``start`` a multiple of 8): the fused quantize-and-pack kernels' last step."""
    if bits <= 8:
        stream_chunk(codes, bits, out[start // 8 * bits:])
    else:
        low_bytes(codes, out[start:start + codes.size])
        stream_chunk(codes, bits, out[n + start // 8 * (bits - 8):])


@njit(nogil=True, cache=True)
def load_chunk(packed, n, start, stop, bits):
    """Inverse of ``store_chunk``: codes start..stop of an n-code message as uint16."""
    codes = np.empty(stop - start, np.uint16)
    if bits <= 8:
        unstream_chunk(packed[start // 8 * bits:], bits, codes)
    else:
        for i in range(stop - start):
            codes[i] = packed[start + i]
        unstream_chunk(packed[n + start // 8 * (bits - 8):], bits, codes)
    return codes


@njit(parallel=True, nogil=True, cache=True)
def _pack(bits, args):
    literally(bits)
    codes, out = args
    n = codes.size
    for c in prange((n + CHUNK - 1) // CHUNK):
        start = c * CHUNK
        chunk = codes[start:min(n, start + CHUNK)]
        if bits <= 8:
            stream_chunk(chunk, bits, out[start // 8 * bits:])
        else:
            low_bytes(chunk, out[start:start + chunk.size])
            stream_chunk(chunk, bits, out[n + start // 8 * (bits - 8):])


@njit(parallel=True, nogil=True, cache=True)
def _unpack(bits, args):
    literally(bits)
    packed, out = args
    n = out.size
    for c in prange((n + CHUNK - 1) // CHUNK):
        start = c * CHUNK
        chunk = out[start:min(n, start + CHUNK)]
        if bits <= 8:
            unstream_chunk(packed[start // 8 * bits:], bits, chunk)
        else:
            for i in range(chunk.size):
                chunk[i] = packed[start + i]
            unstream_chunk(packed[n + start // 8 * (bits - 8):], bits, chunk)


# ``bits`` as a compile-time constant: a width table calls a kernel with a literal width,
# so numba compiles one kernel per width with the group loops unrolled and the b <= 8
# branch folded away (1.3-2x faster than a run-time width, measured). Each width is
# compiled on its first use, alone: compiling all of a table's widths at once cost ~8x the
# compile time of the width a run uses. The kernel is a closure variable of the width's
# kernel, not an argument: numba cannot cache a function that takes a kernel as an argument.
def width_table(kernel):
    """``table(bits, args)``: calls ``kernel(b, args)`` with the literal width b == bits
    (1 to 16, checked by the caller), through a kernel compiled for that width alone on its
    first call (and cached): a run compiles the widths it uses, not all sixteen."""
    fixed = {}

    def table(bits, args):
        entry = fixed.get(bits)
        if entry is None:
            entry = fixed[bits] = _width_kernel(kernel, int(bits))
        entry(args)
    table.fixed = fixed   # width -> its compiled kernel, once called
    return table


@keyed
def _width_kernel(kernel, b: int):
    @closure_kernel(nogil=True)
    def fixed(args):
        kernel(b, args)   # b, a closure's int, is a compile-time constant: the literal width
    return fixed


_pack_width, _unpack_width = width_table(_pack), width_table(_unpack)


def pack(codes: torch.Tensor, bits: int, out: torch.Tensor | None = None) -> torch.Tensor:
    """Pack integer codes in [0, 2**bits) into ``packed_bytes`` bytes (a uint8 tensor,
    written into ``out`` when given), on the host. Codes may be any integer dtype; codes on
    a GPU are packed there by ``dispatch.pack`` (``torch_pack``)."""
    check_bits("bits", bits)
    out = torch.empty(packed_bytes(codes.numel(), bits), dtype=torch.uint8) if out is None else out
    if bits == 8:  # the codes are the bytes
        return out.copy_(codes.reshape(-1))
    src = codes.reshape(-1).contiguous().numpy()
    if bits <= 8 and src.dtype != np.uint8:
        src = src.astype(np.uint8)
    elif bits > 8 and src.dtype not in (np.uint16, np.int32):
        src = src.astype(np.int32)
    if src.size:
        with team.alone_if_small(src.nbytes):
            _pack_width(bits, (src, out.numpy()))
    return out


def unpack(packed: torch.Tensor, n: int, bits: int) -> torch.Tensor:
    """Inverse of ``pack``: uint8 codes for bits <= 8, int32 codes above, on the host."""
    check_bits("bits", bits)
    if packed.numel() != packed_bytes(n, bits):
        raise ValueError(f"expected {packed_bytes(n, bits)} packed bytes for {n} {bits}-bit codes, got {packed.numel()}")
    if bits == 8:  # the bytes are the codes
        return packed
    out = torch.empty(n, dtype=torch.uint8 if bits <= 8 else torch.int32)
    if n:
        with team.alone_if_small(out.numel() * out.element_size()):
            _unpack_width(bits, (packed.contiguous().numpy(), out.numpy()))
    return out
