"""QSGD's own variable-length coding of its codes (Alistarh et al. 2017, Sec. 3.2,
"Efficient encoding"), as compiled kernels.

The paper writes a quantized vector as its norm (32 bits) followed by, for each non-zero
level, the Elias code of the distance to it from the previous non-zero entry, one sign
bit, and the Elias code of the level. The Elias code is Elias's recursive (omega) code
of a positive integer k: write k in binary, then the length of that minus one the same
way, down to 1, in reverse order, and close with a 0 bit; small integers get short codes.
Here a bucket's norm stays in the message's ``norms`` part (float32, one per bucket, as
in the fixed-width message), and each bucket's stream starts with the Elias code of its
non-zero count plus one, so a decoder knows where a bucket ends without reading the next
(the paper's vector is one bucket, whose end is the vector's).

Codes are QSGD's ``level | sign << (bits - 1)``. The stream is MSB-first; the last byte is
padded with zeros. Decoding checks every position, level and the stream's length and
returns a negative status on the first inconsistency, so a corrupt stream is reported,
never decoded into wrong codes. Sequential by nature (each code's position depends on the
codes before it).
"""

from __future__ import annotations

import numpy as np
from numba import njit

CORRUPT = -1
TABLE = 1 << 12  # omega codes of 1..TABLE-1 are looked up, not built


def _omega_table(size: int) -> tuple[np.ndarray, np.ndarray]:
    """(code, length) of Elias's omega code of every k in 1..size-1 (index k)."""
    codes, lengths = np.zeros(size, np.int64), np.zeros(size, np.int64)
    for k in range(1, size):
        bits, m = "0", k
        while m > 1:
            bits = format(m, "b") + bits
            m = m.bit_length() - 1
        codes[k], lengths[k] = int(bits, 2), len(bits)
    return codes, lengths


OMEGA_CODE, OMEGA_BITS = _omega_table(TABLE)
PEEK = 16  # bits a decoder looks at at once: every omega code of up to 16 bits is one lookup


def _peek_table() -> tuple[np.ndarray, np.ndarray]:
    """(value, length) for every PEEK-bit window that starts with an omega code of at most
    PEEK bits; length 0 where none does (a longer code, decoded bit by bit)."""
    values, lengths = np.zeros(1 << PEEK, np.int64), np.zeros(1 << PEEK, np.int64)
    for k in range(1, TABLE):
        width = OMEGA_BITS[k]
        if width <= PEEK:
            first = int(OMEGA_CODE[k]) << (PEEK - width)
            values[first:first + (1 << (PEEK - width))] = k
            lengths[first:first + (1 << (PEEK - width))] = width
    return values, lengths


PEEK_VALUE, PEEK_BITS = _peek_table()


@njit(nogil=True, cache=True)
def _width(m):
    """Bits in the binary form of ``m`` >= 0."""
    width = 0
    while m:
        width += 1
        m >>= 1
    return width


@njit(nogil=True, cache=True)
def omega_bits(k):
    """Length in bits of Elias's omega code of ``k`` >= 1."""
    if k < TABLE:
        return OMEGA_BITS[k]
    total = 1
    while k > 1:
        width = _width(k)
        total += width
        k = width - 1
    return total


@njit(nogil=True, cache=True)
def stream_bits(codes, bucket, bits):
    """Bits of the whole stream for ``codes`` (padding excluded)."""
    sign = 1 << (bits - 1)
    mask = sign - 1
    n = codes.size
    total = 0
    for start in range(0, n, bucket):
        stop = min(n, start + bucket)
        count, last = 0, start - 1
        for i in range(start, stop):
            level = codes[i] & mask
            if level:
                total += omega_bits(i - last) + 1 + omega_bits(level)
                last = i
                count += 1
        total += omega_bits(count + 1)
    return total


@njit(nogil=True, cache=True)
def _put(out, state, value, width):
    """Append the low ``width`` (<= 32) bits of ``value``; state = [byte position, bit
    accumulator, bits held]."""
    acc = (np.uint64(state[1]) << np.uint64(width)) | (np.uint64(value) & ((np.uint64(1) << np.uint64(width)) - np.uint64(1)))
    held = state[2] + width
    pos = state[0]
    while held >= 8:
        held -= 8
        out[pos] = np.uint8((acc >> np.uint64(held)) & np.uint64(0xFF))
        pos += 1
    state[0], state[1], state[2] = pos, np.int64(acc & ((np.uint64(1) << np.uint64(held)) - np.uint64(1))), held


@njit(nogil=True, cache=True)
def _put_omega(out, state, k, groups):
    if k < TABLE:
        _put(out, state, OMEGA_CODE[k], OMEGA_BITS[k])
        return
    depth = 0
    while k > 1:
        groups[depth] = k
        depth += 1
        k = _width(k) - 1
    for d in range(depth - 1, -1, -1):
        _put(out, state, groups[d], _width(groups[d]))
    _put(out, state, 0, 1)


@njit(nogil=True, cache=True)
def encode(codes, bucket, bits, out):
    """Write the stream of ``codes`` into ``out`` (``(stream_bits + 7) // 8`` bytes);
    returns the bytes written."""
    sign = 1 << (bits - 1)
    mask = sign - 1
    n = codes.size
    state = np.zeros(3, np.int64)
    groups = np.zeros(8, np.int64)
    for start in range(0, n, bucket):
        stop = min(n, start + bucket)
        count = 0
        for i in range(start, stop):
            if codes[i] & mask:
                count += 1
        _put_omega(out, state, count + 1, groups)
        last = start - 1
        for i in range(start, stop):
            level = codes[i] & mask
            if level:
                gap = i - last
                if gap < TABLE and level < TABLE and OMEGA_BITS[gap] + OMEGA_BITS[level] < 32:
                    _put(out, state, (((OMEGA_CODE[gap] << 1) | (1 if codes[i] & sign else 0)) << OMEGA_BITS[level])
                         | OMEGA_CODE[level], OMEGA_BITS[gap] + 1 + OMEGA_BITS[level])
                else:
                    _put_omega(out, state, gap, groups)
                    _put(out, state, 1 if codes[i] & sign else 0, 1)
                    _put_omega(out, state, level, groups)
                last = i
    if state[2]:
        _put(out, state, 0, 8 - state[2])
    return state[0]


@njit(nogil=True, cache=True)
def _get(stream, state, width):
    """The next ``width`` (<= 32) bits, or -1 past the end; state = [byte position, bit
    accumulator, bits held]."""
    acc = np.uint64(state[1])
    held = state[2]
    pos = state[0]
    while held < width:
        if pos >= stream.size:
            return -1
        acc = (acc << np.uint64(8)) | np.uint64(stream[pos])
        pos += 1
        held += 8
    held -= width
    value = np.int64((acc >> np.uint64(held)) & ((np.uint64(1) << np.uint64(width)) - np.uint64(1)))
    state[0], state[1], state[2] = pos, np.int64(acc & ((np.uint64(1) << np.uint64(held)) - np.uint64(1))), held
    return value


@njit(nogil=True, cache=True)
def _get_omega(stream, state, limit):
    """The next omega-coded integer, or -1 when the stream ends or the value would pass
    ``limit``: one table lookup for a code of up to ``PEEK`` bits, else bit by bit."""
    acc, held, pos = np.uint64(state[1]), state[2], state[0]
    while held < PEEK and pos < stream.size:
        acc = (acc << np.uint64(8)) | np.uint64(stream[pos])
        pos += 1
        held += 8
    window = (acc << np.uint64(PEEK - held)) if held < PEEK else (acc >> np.uint64(held - PEEK))
    window = np.int64(window & np.uint64((1 << PEEK) - 1))
    state[0], state[1], state[2] = pos, np.int64(acc & ((np.uint64(1) << np.uint64(held)) - np.uint64(1))), held
    width = PEEK_BITS[window]
    if width:
        if width > held:
            return -1
        held -= width
        state[1], state[2] = np.int64(acc & ((np.uint64(1) << np.uint64(held)) - np.uint64(1))), held
        k = PEEK_VALUE[window]
        return k if k <= limit else -1
    k = 1
    while True:
        bit = _get(stream, state, 1)
        if bit < 0:
            return -1
        if bit == 0:
            return k
        if k >= 31:
            return -1
        rest = _get(stream, state, k)
        if rest < 0:
            return -1
        k = (1 << k) | rest
        if k > limit:
            return -1


@njit(nogil=True, cache=True)
def decode(stream, n, bucket, bits, codes):
    """Read ``n`` codes into ``codes`` (zeros where nothing was sent); 0, or ``CORRUPT``
    when the stream is inconsistent or does not end where its last bucket does."""
    sign = 1 << (bits - 1)
    levels = sign - 1
    state = np.zeros(3, np.int64)
    for i in range(n):
        codes[i] = 0
    for start in range(0, n, bucket):
        stop = min(n, start + bucket)
        count = _get_omega(stream, state, stop - start + 1) - 1
        if count < 0:
            return CORRUPT
        last = start - 1
        for _ in range(count):
            gap = _get_omega(stream, state, stop - 1 - last)
            negative = _get(stream, state, 1)
            level = _get_omega(stream, state, levels)
            if gap < 0 or negative < 0 or level < 0:
                return CORRUPT
            last += gap
            codes[last] = level | (sign if negative else 0)
    if stream.size - state[0] != 0 or state[1] != 0:  # only zero padding may follow
        return CORRUPT
    return 0
