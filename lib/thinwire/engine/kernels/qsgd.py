"""QSGD as compiled kernels (``quantize/qsgd.py`` says what they compute): one pass
per message computes, chunk by chunk (whole buckets, in cache), each bucket's norm and
then its bit-packed codes; one pass turns codes back into values.

Random numbers come from a counter-based generator: the uniform for value i of a message
is a 32-bit integer hash (``lowbias32``, a bijection whose output bits look independent)
of i plus the message's first key word, XORed with its second. The 64-bit key is drawn
once per message from the sender state's ``torch.Generator``, so every message is
reproducible from the seed, chunks are rounded in parallel in any order, and the result
does not depend on the thread count. 32-bit multiplies vectorize (64-bit ones do not on
AVX2), so the hash costs a few instructions per value. The 24 high bits of the hash make a
float32 in [0, 1).

Loops run bucket by bucket over slices, so no value pays an integer division to find its
bucket and the inner loops vectorize. Rounding takes |v| times the per-bucket factor
s / norm (a float32) plus u in float64, then float32 (``_round``); a bucket whose norm is
so small that s / norm overflows float32 gets the largest float32 instead (its values are
below s / FLT_MAX in magnitude, so they still round to levels in [0, s]).

Where the CPU has FMA and s < 256 (bits <= 8), a bucket is first rounded in float32 alone
(``_round_fused``: one fused multiply-add, rounded once), which skips the float64
conversions that cost most of the loop.
The product |v| * (s / norm) is exact in float64, so the definition rounds the exact sum
S = |v| (s / norm) + u twice, to float64 and then to float32; the fused add rounds it once.
The two differ only where S rounds to float64 exactly halfway between two float32
neighbours, and then by one float32 step, to the even neighbour. The level (the integer
part) changes only if that step crosses an integer m >= 1; the float32 just below m is odd
(its last bit is set), so the tie goes to m and the fused result t is the float32 below
m. So the fused pass flags a bucket where any value's t and the float32 above it lie on
different levels, and such a bucket (at most about 2 in 1,000 of 512 normal values at 8
bits) is rounded again by ``_round``: the codes are the definition's.

A code is ``level | sign << (bits - 1)``: a (bits - 1)-bit level in [0, s] and a sign bit
(1 for negative), laid out by ``bitpack`` like any other ``bits``-bit code.
"""

from __future__ import annotations

import numpy as np
from numba import literally, njit, prange

from . import bitpack, crc, fused, stream
from .fused import bits_float, float_bits, fma32

CHUNK = bitpack.CHUNK
_M1, _M2 = np.uint32(0x7FEB352D), np.uint32(0x846CA68B)
_S16, _S15, _S8 = np.uint32(16), np.uint32(15), np.uint32(8)
_INV24 = np.float32(1.0 / (1 << 24))
FLOAT32_MAX = np.float64(np.finfo(np.float32).max)
_ONE = np.int32(1)
_MAGNITUDE = np.uint32(0x7FFFFFFF)
_INF_BITS = np.int32(0x7F800000)   # magnitudes' bits at and above it: Inf and NaN
FUSED = fused.HARDWARE  # rounding in float32 first (``_round_fused``)


@njit(nogil=True, cache=True, inline="always")
def lowbias32(z):
    """A 32-bit integer hash (Wellons' lowbias32): a bijection of uint32. numba widens
    integer arithmetic to 64 bits, so every step is cut back to 32."""
    z = np.uint32(z)
    z = np.uint32(z ^ (z >> _S16))
    z = np.uint32(z * _M1)
    z = np.uint32(z ^ (z >> _S15))
    z = np.uint32(z * _M2)
    return np.uint32(z ^ (z >> _S16))


@njit(nogil=True, cache=True, inline="always")
def uniform24(k1, k2, i):
    """The float32 uniform in [0, 1) of counter ``i`` (uint32) under key words (k1, k2)."""
    return np.float32(np.int32(np.uint32(lowbias32(np.uint32(k1 + i)) ^ k2) >> _S8)) * _INV24


@njit(nogil=True, cache=True, fastmath={"reassoc", "contract"})
def _norm(x, use_max):
    """The L2 norm of ``x`` (float64 sum of squares, which no float32 value overflows) or
    max |x|; NaN or Inf when ``x`` holds NaN or Inf. max |x| is the integer maximum of the
    magnitudes' bits, which order like the floats (``extrema``) and whose maximum
    vectorizes; a float maximum does not without leave to ignore NaN (and took QSGD(4, max)'s
    encode more than twice as long)."""
    if use_max:
        bits = x.view(np.uint32)
        top = np.int32(0)
        for i in range(bits.size):
            top = max(top, np.int32(bits[i] & _MAGNITUDE))
        return np.nan if top >= _INF_BITS else np.float64(bits_float(top))
    acc = 0.0
    for i in range(x.size):
        v = np.float64(x[i])
        acc += v * v
    return np.sqrt(acc)


@njit(nogil=True, cache=True)
def _round(x, scale, s, sign_bit, k1, k2, out):
    """Codes of one bucket: level = floor(|x| scale + u), clamped to s, | sign bit.
    ``k1`` already holds the bucket's first counter. The product is exact in float64 (24 x
    24 bits) and the sum is rounded once to float64, then to float32: no result depends on
    whether the compiler fuses the multiply and add (it may, in one build and not another)."""
    wide = np.float64(scale)
    for j in range(x.size):
        v = x[j]
        u = uniform24(k1, k2, np.uint32(j))
        level = min(np.int32(np.float32(np.float64(abs(v)) * wide + np.float64(u))), s)
        out[j] = level + np.int32(v < np.float32(0.0)) * sign_bit


@njit(nogil=True, cache=True)
def _round_fused(x, scale, s, sign_bit, k1, k2, out):
    """``_round`` in float32 alone: level = floor(fma(|x|, scale, u)). Returns whether some
    value's level may differ from ``_round``'s: where t = fma(...) and the float32 above it
    (t's bits + 1, as t >= 0) lie on different levels."""
    unsure = False
    for j in range(x.size):
        v = x[j]
        t = fma32(abs(v), scale, uniform24(k1, k2, np.uint32(j)))
        level = np.int32(t)
        unsure = unsure | (np.int32(bits_float(np.int32(float_bits(t) + _ONE))) != level)
        out[j] = min(level, s) + np.int32(v < np.float32(0.0)) * sign_bit
    return unsure


@njit(nogil=True, cache=True)
def _quantize_chunk(x, start, bucket, levels, use_max, k1, k2, sign_bit, norms, codes):
    """Norms of the buckets of x[start:start + codes.size] and their codes."""
    for b0 in range(0, codes.size, bucket):
        b = (start + b0) // bucket
        b1 = min(codes.size, b0 + bucket)
        xs = x[start + b0:start + b1]
        norm = np.float32(_norm(xs, use_max))
        norms[b] = norm
        scale = np.float32(0.0)
        if norm > 0:
            scale = np.float32(min(levels / np.float64(norm), FLOAT32_MAX))
        first = np.uint32(k1 + np.uint32(start + b0))
        if not (FUSED and levels < 256) or _round_fused(xs, scale, np.int32(levels), sign_bit, first, k2,
                                                        codes[b0:b1]):
            _round(xs, scale, np.int32(levels), sign_bit, first, k2, codes[b0:b1])


@njit(nogil=True, cache=True)
def _quantize_packed(bits, args):
    literally(bits)
    x, bucket, chunk, use_max, k1, k2, norms, out, crcs = args
    _quantize_parallel(bits, x, bucket, chunk, use_max, k1, k2, norms, out, crcs)


@njit(parallel=True, nogil=True, cache=True)
def _quantize_parallel(bits, x, bucket, chunk, use_max, k1, k2, norms, out, crcs):
    """The arrays come as arguments, not in a tuple: numba 0.68 loses a parallel loop's
    writes to some arrays unpacked from a tuple argument."""
    literally(bits)
    n = x.size
    levels = (1 << (bits - 1)) - 1
    sign_bit = np.int32(1 << (bits - 1))
    for c in prange((n + chunk - 1) // chunk):
        start = c * chunk
        stop = min(n, start + chunk)
        if bits == 8:  # the codes are the bytes
            _quantize_chunk(x, start, bucket, levels, use_max, k1, k2, sign_bit, norms, out[start:stop])
        else:
            codes = np.empty(stop - start, np.uint16)
            _quantize_chunk(x, start, bucket, levels, use_max, k1, k2, sign_bit, norms, codes)
            bitpack.store_chunk(codes, n, start, bits, out)
        if crcs.size:  # the chunk's bytes, checksummed while cached (bits <= 8: one plane)
            crcs[c] = crc.crc32c(out[start * bits // 8:out.size if stop == n else stop * bits // 8])


@njit(nogil=True, cache=True, fastmath={"contract"})
def _values(codes, step, s, out):
    for j in range(codes.size):
        c = np.int32(codes[j])
        value = np.float32(c & s) * step  # s = 2^(bits-1) - 1: the level bits
        out[j] = -value if c > s else value


@njit(nogil=True, cache=True)
def _values_chunk(codes, start, bucket, step, s, out):
    for b0 in range(0, out.size, bucket):
        b1 = min(out.size, b0 + bucket)
        _values(codes[b0:b1], step[(start + b0) // bucket], s, out[b0:b1])


@njit(nogil=True, cache=True)
def _values_out(codes, start, bucket, step, s, out, raw, address):
    """Chunk ``start`` of the values: into ``out`` directly, or (``raw``: ``out``'s bytes,
    a large output) built in cache and streamed out (``stream.stream_out``)."""
    if raw.size == 0:
        _values_chunk(codes, start, bucket, step, s, out[start:start + codes.size])
        return
    values = np.empty(codes.size, np.float32)
    _values_chunk(codes, start, bucket, step, s, values)
    stream.stream_out(values.view(np.uint8), raw, 4 * start, address)


@njit(nogil=True, cache=True)
def _dequantize_packed(bits, args):
    literally(bits)
    packed, bucket, chunk, step, out, raw, address, crcs = args
    _dequantize_parallel(bits, packed, bucket, chunk, step, out, raw, address, crcs)


@njit(parallel=True, nogil=True, cache=True)
def _dequantize_parallel(bits, packed, bucket, chunk, step, out, raw, address, crcs):
    """With ``crcs``, each chunk's packed bytes are checksummed as they are read (bits <= 8),
    before they are turned into values."""
    literally(bits)
    n = out.size
    s = np.int32((1 << (bits - 1)) - 1)
    for c in prange((n + chunk - 1) // chunk):
        start = c * chunk
        stop = min(n, start + chunk)
        if crcs.size:
            crcs[c] = crc.crc32c(packed[start * bits // 8:packed.size if stop == n else stop * bits // 8])
        if bits == 8:
            _values_out(packed[start:stop], start, bucket, step, s, out, raw, address)
        else:
            _values_out(bitpack.load_chunk(packed, n, start, stop, bits), start, bucket, step, s, out, raw, address)


_quantize_width = bitpack.width_table(_quantize_packed)
_dequantize_width = bitpack.width_table(_dequantize_packed)


def chunk_length(bucket: int) -> int:
    """Values per parallel chunk: whole buckets, about ``CHUNK`` values, a multiple of 8
    (so that every chunk starts on a whole group of packed codes)."""
    chunk = bucket * max(1, CHUNK // bucket)
    while chunk % 8:
        chunk += bucket
    return chunk


def quantize_packed(x: np.ndarray, bucket: int, norm: str, bits: int, key: int, norms: np.ndarray,
                    out: np.ndarray) -> int | None:
    """Each bucket's norm (float32, into ``norms``) and the stochastically rounded
    ``bits``-bit codes of ``x`` into ``out`` (bitpack layout); ``key`` < 2^64. Returns the
    CRC-32C of ``out`` where the kernel computed it on the way (``crc.HARDWARE``, bits <= 8),
    else None."""
    chunk = chunk_length(bucket)
    chunks = -(-x.size // chunk)
    with_crc = crc.HARDWARE and bitpack.one_plane(bits) and x.size > 0
    crcs = np.empty(chunks if with_crc else 0, np.uint32)
    if x.size:
        k1, k2 = np.uint32(key & 0xFFFFFFFF), np.uint32(key >> 32)
        args = (x, bucket, chunk, norm == "max", k1, k2, norms, out, crcs)
        _quantize_width(bits, args)
    if not with_crc:
        return None
    return crc.join(crcs, chunk * bits // 8, out.size - (chunks - 1) * chunk * bits // 8)


def dequantize_packed(packed: np.ndarray, bucket: int, step: np.ndarray, bits: int, out: np.ndarray,
                      checksum: bool = False) -> int | None:
    """level * step[bucket], signed, for every packed code (float32 into ``out``); with
    ``checksum``, returns the CRC-32C of ``packed`` taken chunk by chunk as it is read
    (``crc.HARDWARE``, bits <= 8: a message verified in the same pass), else None."""
    chunk = chunk_length(bucket)
    chunks = -(-out.size // chunk)
    with_crc = checksum and crc.HARDWARE and bitpack.one_plane(bits) and out.size > 0
    crcs = np.empty(chunks if with_crc else 0, np.uint32)
    if out.size:
        args = (packed, bucket, chunk, step, out, stream.destination(out, built=True), out.ctypes.data, crcs)
        _dequantize_width(bits, args)
    if not with_crc:
        return None
    return crc.join(crcs, chunk * bits // 8, packed.size - (chunks - 1) * chunk * bits // 8)
