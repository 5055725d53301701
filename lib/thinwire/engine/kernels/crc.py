"""CRC-32C inside compiled kernels (the message checksum of ``wire/checksum.py``), on x86
CPUs with SSE 4.2: a kernel that has just written a piece of a message checksums it while
it is still in the first-level cache, so the message is not read again to checksum it.

The ``crc32`` instruction takes 8 bytes per call with a latency of 3 cycles and a
throughput of one per cycle, so ``crc32c`` runs three independent streams over the
thirds of its range and joins them: CRC(A || B) = CRC(A) x^(8 |B|) + CRC(B) in
GF(2)[x] mod the polynomial (``combine``, the identity ``checksum.py`` uses between
threads; here in compiled form, with ``crc_math``'s table of x^(2^k)). On CPUs with
``VPCLMULQDQ`` (``FOLD``), ``crc32c`` folds 256 bytes a step with carry-less products
instead (``crc_fold.py``: about 3x faster on data in the cache) and finishes with the
instruction; the parallel ``checksum``, which reads from memory, keeps the three
streams, which prefetch ahead and draw memory as fast.

``HARDWARE`` says whether the CPU numba compiles for has the instruction; where it does
not, ``crc32c`` computes the same value a bit at a time (slowly: callers then checksum
whole messages with the ``crc32c`` package instead), so every kernel still compiles.
"""

from __future__ import annotations

import platform

import numpy as np
from llvmlite import ir
from numba import njit, prange, types
from numba.core import cgutils
from numba.extending import intrinsic

from . import crc_fold
from .bits import prefetch
from .crc_math import POLY, X_2K as _X_2K
from .vector_width import target_features

_FEATURES = target_features()
HARDWARE = platform.machine().lower() in ("x86_64", "amd64") and _FEATURES is not None and "+sse4.2" in _FEATURES
X_2K = np.array(_X_2K, dtype=np.uint32)
_POLY32 = np.uint32(POLY)
_ONES = np.uint32(0xFFFFFFFF)
FOLD = HARDWARE and crc_fold.FOLD
AHEAD = 256   # words (2 KiB) each chain prefetches ahead: 100 MB on two cores 3.2 -> 1.9 ms


def _instruction(llvm_name: str, register, data):
    """An intrinsic ``f(crc, data)``: the CRC register advanced over ``data``'s bytes by
    the ``crc32`` instruction (``register`` and ``data``: numba integer types)."""
    @intrinsic
    def advance(typingctx, crc, value):
        if crc != register or value != data:
            return None

        def codegen(context, builder, signature, args):
            fnty = ir.FunctionType(ir.IntType(register.bitwidth), [ir.IntType(register.bitwidth),
                                                                    ir.IntType(data.bitwidth)])
            return builder.call(cgutils.get_or_insert_function(builder.module, fnty, llvm_name), args)
        return register(register, data), codegen
    return advance


@njit(nogil=True, cache=True)
def _bitwise(crc, value, nbits):
    """The CRC register advanced over the low ``nbits`` bits of ``value``, a bit at a time
    (what the instruction computes; for targets without it, so kernels still compile)."""
    crc = np.uint64(crc)
    value = np.uint64(value)
    for _ in range(nbits):
        crc = ((crc >> np.uint64(1)) ^ np.uint64(POLY)) if (crc ^ value) & np.uint64(1) else crc >> np.uint64(1)
        value >>= np.uint64(1)
    return crc


@njit(nogil=True, cache=True)
def _software_word(crc, value):
    return _bitwise(crc, value, 64)


@njit(nogil=True, cache=True)
def _software_byte(crc, value):
    return np.uint32(_bitwise(crc, value, 8))


if HARDWARE:
    _crc_word = _instruction("llvm.x86.sse42.crc32.64.64", types.uint64, types.uint64)  # 8 bytes
    _crc_byte = _instruction("llvm.x86.sse42.crc32.32.8", types.uint32, types.uint8)    # 1 byte
else:
    _crc_word, _crc_byte = _software_word, _software_byte


@njit(nogil=True, cache=True)
def multiply(a, b):
    """a * b mod the polynomial, both reflected (``crc_math.multiply``)."""
    a, b = np.uint32(a), np.uint32(b)
    product = np.uint32(0)
    bit = np.uint32(1 << 31)
    while a:
        if a & bit:
            product ^= b
            a ^= bit
        bit = np.uint32(bit >> np.uint32(1))
        b = np.uint32((b >> np.uint32(1)) ^ _POLY32) if b & np.uint32(1) else np.uint32(b >> np.uint32(1))
    return product


@njit(nogil=True, cache=True)
def _shift(length):
    """x^(8 length) mod the polynomial: the product of the table's x^(2^k) over length's bits."""
    shift = np.uint32(1 << 31)
    k, n = 3, length
    while n:
        if n & 1:
            shift = multiply(X_2K[k], shift)
        n >>= 1
        k += 1
    return shift


@njit(nogil=True, cache=True)
def combine(crc_a, crc_b, length_b):
    """The CRC-32C of A || B from CRC(A), CRC(B) and len(B) in bytes."""
    return multiply(_shift(length_b), crc_a) ^ np.uint32(crc_b)


@njit(nogil=True, cache=True)
def _advance(register, buffer):
    """The CRC register (not inverted) advanced over a short uint8 array, one stream."""
    whole = buffer.size // 8
    crc = np.uint64(register)
    if whole:
        words = buffer[:whole * 8].view(np.uint64)
        for i in range(whole):
            crc = _crc_word(crc, words[i])
    tail = np.uint32(crc)
    for i in range(whole * 8, buffer.size):
        tail = _crc_byte(tail, buffer[i])
    return tail


@njit(nogil=True, cache=True)
def folded_crc(folded, rest):
    """The CRC-32C of a buffer from ``crc_fold``'s 256 folded bytes (uint64 array) of its
    whole steps and its bytes after them (uint8 array): the instruction over both."""
    register = _advance(np.uint32(0), folded.view(np.uint8))
    return _advance(register, rest) ^ _ONES


@njit(nogil=True, cache=True)
def _folded(buffer):
    """``crc32c`` by folding 256 bytes a step (``crc_fold``), then the instruction over the
    folded 256 bytes and the rest."""
    steps = buffer.size // crc_fold.STEP
    folded = np.empty(crc_fold.STEP // 8, np.uint64)
    crc_fold.fold(buffer[:steps * crc_fold.STEP].view(np.uint64), steps, folded)
    return folded_crc(folded, buffer[steps * crc_fold.STEP:])


@njit(nogil=True, cache=True)
def streams(buffer):
    """The CRC-32C of a contiguous uint8 array with the ``crc32`` instruction alone."""
    n = buffer.size
    whole = n // 8
    words = buffer[:whole * 8].view(np.uint64)
    third = (whole // 3) & ~7  # whole cache lines per chain
    a = np.uint64(0xFFFFFFFF)
    b = np.uint64(0xFFFFFFFF)
    c = np.uint64(0xFFFFFFFF)
    for line in range(0, third, 8):  # three chains in flight: one crc32 per cycle instead of one per three
        if line + AHEAD < third:     # three streams outrun the hardware prefetcher: fetch ahead
            prefetch(words, line + AHEAD)
            prefetch(words, third + line + AHEAD)
            prefetch(words, 2 * third + line + AHEAD)
        for i in range(line, line + 8):
            a = _crc_word(a, words[i])
            b = _crc_word(b, words[third + i])
            c = _crc_word(c, words[2 * third + i])
    tail = _advance(c, buffer[3 * third * 8:])
    first = np.uint32(a) ^ _ONES
    if third:
        first = combine(first, np.uint32(b) ^ _ONES, 8 * third)
        return combine(first, tail ^ _ONES, n - 16 * third)
    return tail ^ _ONES


@njit(nogil=True, cache=True)
def _with_folding(buffer):
    if buffer.size >= 2 * crc_fold.STEP:
        return _folded(buffer)
    return streams(buffer)


# The CRC-32C of a contiguous uint8 array (the ``crc32c`` package's value): folded where
# the CPU can (``crc_fold.FOLD``) and the array holds two steps, else by ``streams``.
crc32c = _with_folding if FOLD else streams


@njit(nogil=True, cache=True)
def _join(crcs, length, last):
    shift = _shift(length)  # once for every piece of that length
    crc = np.uint32(crcs[0])
    for c in range(1, crcs.size - 1):
        crc = multiply(shift, crc) ^ np.uint32(crcs[c])
    if crcs.size > 1:
        crc = combine(crc, crcs[crcs.size - 1], last)
    return crc


def join(crcs: np.ndarray, length: int, last: int) -> int:
    """The CRC-32C of consecutive pieces from theirs: every piece ``length`` bytes long
    except the last, ``last`` bytes."""
    return int(_join(crcs, length, last)) if crcs.size else 0


PIECE = 1 << 20   # bytes per parallel piece of ``checksum``


@njit(parallel=True, nogil=True, cache=True)
def _pieces(buffer, crcs):
    n = buffer.size
    for c in prange(crcs.size):
        crcs[c] = streams(buffer[c * PIECE:min(n, (c + 1) * PIECE)])  # from memory: as fast as folding


def checksum(buffer: np.ndarray) -> int:
    """The CRC-32C of a contiguous uint8 array, over numba's threads: a ``PIECE`` at a
    time, the pieces' CRCs joined (faster than the ``crc32c`` package over Python threads,
    which one core's memory bandwidth limits: the engine's README)."""
    pieces = max(1, -(-buffer.size // PIECE))
    crcs = np.empty(pieces, np.uint32)
    _pieces(buffer, crcs)
    return join(crcs, PIECE, buffer.size - (pieces - 1) * PIECE)


def warm_up() -> None:
    """Load (or compile) the parallel checksum, which only large messages use."""
    checksum(np.zeros(8, np.uint8))
