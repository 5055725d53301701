"""Range asymmetric numeral systems (rANS) in independent streams, as compiled kernels:
the ``ans`` coder of quantization codes (``symbol_coders.AnsCoder``).

rANS is J. Duda's (arXiv:1311.2540, 2013, Sec. 3, "range variant"): a symbol s of quantized
frequency f_s and cumulative frequency c_s, of a total M = 2**PRECISION, takes the state to
C(s, x) = (x // f_s) M + (x mod f_s) + c_s, and the decoder inverts it from the slot x mod M.
The state stays in [L, 2**32 L), L = 2**32, moving 32-bit words out and in: the 64-bit-state
arrangement of F. Giesen's ``ryg_rans`` (``rans64.h``; no code of it is used). The encoder
runs from the last symbol to the first, so that the decoder reads forward.

**Model.** The exact counts travel with the message; both ends derive the frequencies from
them with integers only (``frequencies``): a used symbol gets 1 + floor(count (M - k) / n),
the most frequent what is left. PRECISION = 24 bits.

**Streams.** Chunks of ``CHUNK`` symbols are coded as streams of their own from the state L,
in parallel, so the message is the same whatever the number of threads; each stream adds
its final state (8 bytes) and its word offset (4, the message's ``syncs``). A decoder checks
that each stream uses exactly its words and ends in the state L, or the message is corrupt.
Decoding looks the slot up in a table (the decoder's own choice of size) and walks the
cumulative frequencies from there. A thread codes ``GROUP`` streams in lockstep so that
independent chains overlap; ``make bench`` times it against ``constriction`` (the engine's README).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

PRECISION = 24             # M = 2**24: the quantized frequencies' total
LOW = 1 << 32              # L: the state's lower bound (the state is in [L, 2**64))
CHUNK = 1 << 16            # symbols per stream
LOOKUP_BITS = 12           # the decoder's slot table: at least 2**12 entries,
MAX_LOOKUP_BITS = 18       # at most 2**18
GROUP = 4                  # streams a thread encodes or decodes in lockstep
_U64 = np.uint64
_M = _U64(1 << PRECISION)
_MASK = _U64((1 << PRECISION) - 1)
_WORD = _U64(0xFFFFFFFF)


def frequencies(counts: np.ndarray) -> np.ndarray:
    """The quantized frequencies (int64, summing to 2**PRECISION) of exact ``counts``: a
    used symbol gets 1 + floor(count (M - k) / n), the most frequent (the first of them)
    the rest. At least two symbols must be used, and n < 2**39 (int64 products)."""
    counts = np.asarray(counts, dtype=np.int64)
    n, used = int(counts.sum()), counts > 0
    k = int(used.sum())
    if k < 2 or n >= 1 << 39:
        raise ValueError(f"rANS needs at least 2 used symbols and fewer than 2**39 in all, got {k} of {n}")
    total = 1 << PRECISION
    freq = np.where(used, 1 + counts * (total - k) // n, 0)
    freq[int(np.argmax(counts))] += total - int(freq.sum())
    return freq


def _model(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The frequencies and their cumulative sums (from 0 to M), uint32, both ends' model."""
    freq = frequencies(counts)
    return freq.astype(np.uint32), np.concatenate(([0], np.cumsum(freq))).astype(np.uint32)


@njit(nogil=True, cache=True, inline="always")
def _put(x, s, freq, cum, room, p):
    """C(s, x), the word it pushes out (if any) written below ``p`` -> (x, p)."""
    f = _U64(freq[s])
    if x >= f << _U64(64 - PRECISION):
        p -= 1
        room[p] = np.uint32(x & _WORD)
        x >>= _U64(32)
    return (x // f) * _M + x % f + _U64(cum[s]), p


@njit(nogil=True, cache=True, inline="always")
def _finish(x, room, p):
    """The final state, high word first, below ``p`` -> the stream's first word."""
    room[p - 1] = np.uint32(x & _WORD)
    room[p - 2] = np.uint32(x >> _U64(32))
    return p - 2


@njit(parallel=True, nogil=True, cache=True)
def _encode_chunks(symbols, freq, cum, chunk, room, sizes):
    """Stream c (symbols c chunk .. (c + 1) chunk - 1) into ``room``'s words below
    c (chunk + 2) + its symbols + 2, downward from there, last symbol first; its length
    in words -> ``sizes[c]``. Parallel over groups of ``GROUP`` streams, a group's
    streams encoded in lockstep, so that their divisions overlap."""
    n = symbols.size
    streams = sizes.size
    for g in prange((streams + GROUP - 1) // GROUP):
        c0 = g * GROUP
        if (c0 + GROUP) * chunk <= n:           # four whole streams
            t0 = c0 * (chunk + 2) + chunk + 2
            t1, t2, t3 = t0 + (chunk + 2), t0 + 2 * (chunk + 2), t0 + 3 * (chunk + 2)
            x0 = x1 = x2 = x3 = _U64(LOW)
            p0, p1, p2, p3 = t0, t1, t2, t3
            i0 = c0 * chunk
            for i in range(i0 + chunk - 1, i0 - 1, -1):
                x0, p0 = _put(x0, symbols[i], freq, cum, room, p0)
                x1, p1 = _put(x1, symbols[i + chunk], freq, cum, room, p1)
                x2, p2 = _put(x2, symbols[i + 2 * chunk], freq, cum, room, p2)
                x3, p3 = _put(x3, symbols[i + 3 * chunk], freq, cum, room, p3)
            sizes[c0] = t0 - _finish(x0, room, p0)
            sizes[c0 + 1] = t1 - _finish(x1, room, p1)
            sizes[c0 + 2] = t2 - _finish(x2, room, p2)
            sizes[c0 + 3] = t3 - _finish(x3, room, p3)
        else:                                   # the last group: one stream at a time
            for c in range(c0, streams):
                start, stop = c * chunk, min(n, (c + 1) * chunk)
                top = c * (chunk + 2) + (stop - start) + 2
                x, p = _U64(LOW), top
                for i in range(stop - 1, start - 1, -1):
                    x, p = _put(x, symbols[i], freq, cum, room, p)
                sizes[c] = top - _finish(x, room, p)


def encode(symbols: np.ndarray, counts: np.ndarray, chunk: int = CHUNK) -> tuple[np.ndarray, np.ndarray]:
    """rANS-code ``symbols`` (uint8 or uint16, each with a count > 0 in ``counts``, the
    symbols' exact histogram) -> (the streams' words (uint32), the word offset of every
    stream after the first (uint32))."""
    symbols = np.ascontiguousarray(symbols).reshape(-1)
    freq, cum = _model(counts)
    n = symbols.size
    streams = (n + chunk - 1) // chunk
    room = np.empty(streams * (chunk + 2), dtype=np.uint32)   # pages are touched only where written
    sizes = np.empty(streams, dtype=np.int64)
    _encode_chunks(symbols, freq, cum, chunk, room, sizes)
    offsets = np.cumsum(sizes) - sizes
    words = np.empty(int(sizes.sum()), dtype=np.uint32)
    _copy_streams(room, n, chunk, sizes, offsets, words)
    return words, offsets[1:].astype(np.uint32)


@njit(nogil=True, cache=True)
def _copy_streams(room, n, chunk, sizes, offsets, words):
    """The streams, each at the top of its part of ``room``, one after the other."""
    for c in range(sizes.size):
        top = c * (chunk + 2) + min(chunk, n - c * chunk) + 2
        words[offsets[c]: offsets[c] + sizes[c]] = room[top - sizes[c]: top]


@njit(nogil=True, cache=True, inline="always")
def _start(words, p):
    """A stream's state, from its first two words -> (x, the next word)."""
    return (_U64(words[p]) << _U64(32)) | _U64(words[p + 1]), p + 2


@njit(nogil=True, cache=True, inline="always")
def _get(x, p, end, words, freq, cum, lookup, shift):
    """D(x): the symbol, and the state before it, a word read in (from ``p``, not past
    ``end``) while it is below L -> (s, x, p)."""
    slot = x & _MASK
    s = np.int64(lookup[slot >> shift])
    while _U64(cum[s + 1]) <= slot:
        s += 1
    x = _U64(freq[s]) * (x >> _U64(PRECISION)) + slot - _U64(cum[s])
    if x < _U64(LOW):
        word = _U64(words[p]) if p < end else _U64(0)
        x = (x << _U64(32)) | word
        p += 1
    return s, x, p


@njit(nogil=True, cache=True)
def _fill_lookup(cum, shift, lookup):
    """Entry b of ``lookup``: the symbol whose slots hold b << shift (the last of those
    with cum <= b << shift; a symbol of frequency 0 shares its cum with the next)."""
    s = 0
    for b in range(lookup.size):
        while cum[s + 1] <= b << shift:
            s += 1
        lookup[b] = s


@njit(parallel=True, nogil=True, cache=True)
def _decode_chunks(words, bounds, freq, cum, lookup, shift, chunk, out, bad):
    """Stream c (words ``bounds[c] .. bounds[c + 1] - 1``) into symbols c chunk ..
    (c + 1) chunk - 1 of ``out``; ``bad[g]`` (zeros) set where a stream of group g does
    not end in the state L with its last word read. Parallel over groups of ``GROUP``
    streams; a thread decodes a whole group's streams in lockstep."""
    n = out.size
    streams = bounds.size - 1
    for g in prange(bad.size):
        c0 = g * GROUP
        if (c0 + GROUP) * chunk <= n:           # four whole streams
            x0, p0 = _start(words, bounds[c0])
            x1, p1 = _start(words, bounds[c0 + 1])
            x2, p2 = _start(words, bounds[c0 + 2])
            x3, p3 = _start(words, bounds[c0 + 3])
            e0, e1, e2, e3 = bounds[c0 + 1], bounds[c0 + 2], bounds[c0 + 3], bounds[c0 + 4]
            i0 = c0 * chunk
            for i in range(i0, i0 + chunk):
                s0, x0, p0 = _get(x0, p0, e0, words, freq, cum, lookup, shift)
                s1, x1, p1 = _get(x1, p1, e1, words, freq, cum, lookup, shift)
                s2, x2, p2 = _get(x2, p2, e2, words, freq, cum, lookup, shift)
                s3, x3, p3 = _get(x3, p3, e3, words, freq, cum, lookup, shift)
                out[i] = s0
                out[i + chunk] = s1
                out[i + 2 * chunk] = s2
                out[i + 3 * chunk] = s3
            if not (x0 == LOW and x1 == LOW and x2 == LOW and x3 == LOW
                    and p0 == e0 and p1 == e1 and p2 == e2 and p3 == e3):
                bad[g] = 1
        else:                                   # the last group: one stream at a time
            for c in range(c0, streams):
                x, p = _start(words, bounds[c])
                for i in range(c * chunk, min(n, (c + 1) * chunk)):
                    s, x, p = _get(x, p, bounds[c + 1], words, freq, cum, lookup, shift)
                    out[i] = s
                if not (x == LOW and p == bounds[c + 1]):
                    bad[g] = 1


def decode(words: np.ndarray, starts: np.ndarray, counts: np.ndarray, n: int, chunk: int,
           out: np.ndarray) -> np.ndarray:
    """Inverse of ``encode``: the ``n`` symbols into ``out`` (uint8 or uint16). Raises
    ``ValueError`` where the streams do not fit ``n`` and ``chunk`` or do not decode to
    their ends."""
    streams = (n + chunk - 1) // chunk
    if starts.size != streams - 1:
        raise ValueError(f"{n} symbols in streams of {chunk} need {streams - 1} stream offsets, got {starts.size}")
    bounds = np.empty(streams + 1, dtype=np.int64)
    bounds[0], bounds[-1] = 0, words.size
    bounds[1:-1] = starts
    if (np.diff(bounds) < 2).any():
        raise ValueError(f"stream offsets {starts[:8].tolist()}... are out of order or leave a stream under 2 words "
                         f"of the {words.size}")
    freq, cum = _model(counts)
    shift = PRECISION - min(MAX_LOOKUP_BITS, max(LOOKUP_BITS, int(freq.size).bit_length() + 2))
    lookup = np.empty(1 << (PRECISION - shift), dtype=np.int32)
    _fill_lookup(cum, shift, lookup)
    bad = np.zeros((streams + GROUP - 1) // GROUP, np.uint8)
    _decode_chunks(words, bounds, freq, cum, lookup, _U64(shift), chunk, out, bad)
    if bad.any():
        raise ValueError(f"{int(bad.sum())} group(s) of rANS streams do not decode to their ends")
    return out
