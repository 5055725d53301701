"""The Huffman bitstream (Oland & Raj 2015, Alg. 1 line 9 ``Encode`` and Alg. 2 line 3
``Decode``), as compiled kernels.

Layout: the canonical codewords of the symbols, most significant bit first, one after the
other with no padding between them; the last byte is zero-filled. Its length is exactly
``ceil(sum(freq * length) / 8)`` bytes. Beside it travel *sync points*: the bit offset
of every ``sync``-th symbol (uint32), which let the decoder work on all
``ceil(n / sync)`` chunks at once.

Encoding is a compiled kernel (numba) in two parallel passes over the chunks between
sync points: (1) each chunk's length in bits, whose running sum gives the sync points;
(2) each chunk writes its codewords, most significant bit first, through a 64-bit
register into the 64-bit words from its sync point on. Words are whole to one chunk
except the first word of each chunk, which it may share with the chunk before: that word
is kept aside and OR-ed in afterwards, in order.

Decoding is a compiled kernel (numba), parallel over the chunks between sync points.
Within a chunk, each symbol: read the 64 bits starting at the current 32-bit word, shift
out the bit offset, and look the next ``T`` bits up in a table of ``2**T`` entries
(symbol << 8 | length; T = 12, a table that stays in the first-level cache). Codewords
longer than ``T`` (rare symbols) are resolved by canonical decoding: a comparison against
the left-justified last codeword of each length gives the length, and the codeword's rank
among those of its length gives the symbol.

The decoder gives a thread ``GROUP`` = 4 chunks at once and advances them in lockstep, one
symbol of each per iteration: each symbol waits on the one before it in its chunk (its bit
position), so four independent chains keep the core busy where one would leave it waiting
(on 25M 8-bit symbols, one core: 131 -> 452 M symbols/s). The same lockstep in the encoder,
with branchless registers, gained 2% (329 -> 337 M symbols/s) and was left out.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .huffman_code import MAX_LENGTH, canonical_codes

TABLE_BITS = 12   # at most 2**12 table entries (16 KiB: the first-level cache)
GROUP = 4         # chunks a decoding thread works on in lockstep
_U64 = np.uint64


def encoded_bits(freq: np.ndarray, lengths: np.ndarray) -> int:
    """sum(freq * length): the stream's length in bits."""
    return int(np.dot(np.asarray(freq, dtype=np.int64), np.asarray(lengths, dtype=np.int64)))


@njit(parallel=True, nogil=True, cache=True)
def _chunk_bits(symbols, lengths, sync, out):
    n = symbols.size
    for c in prange(out.size):
        total = 0
        for i in range(c * sync, min(n, (c + 1) * sync)):
            total += lengths[symbols[i]]
        out[c] = total


@njit(nogil=True, cache=True)
def _put(words, first, c, k, w, word):
    """Word ``k`` of chunk ``c`` (at ``words[w]``): the first one is kept aside."""
    if k == 0:
        first[c] = word
    else:
        words[w] = word


@njit(parallel=True, nogil=True, cache=True)
def _encode_chunks(symbols, packed, sync, starts, words):
    """Write chunk c's codewords from bit ``starts[c]`` on (``packed``: codeword << 8 | length)."""
    n = symbols.size
    first = np.zeros(starts.size, np.uint64)   # each chunk's first word, merged below
    for c in prange(starts.size):
        w0 = starts[c] >> 6
        w = w0
        used = starts[c] & 63                  # bits of word w taken before this chunk
        acc = np.uint64(0)
        for i in range(c * sync, min(n, (c + 1) * sync)):
            e = packed[symbols[i]]
            ln = np.int64(e & np.uint64(255))
            code = e >> np.uint64(8)
            free = 64 - used
            if ln < free:
                acc |= code << np.uint64(free - ln)
                used += ln
                continue
            rest = ln - free                    # bits that go to the next word
            _put(words, first, c, w - w0, w, acc | (code >> np.uint64(rest)))
            w += 1
            acc = code << np.uint64(64 - rest) if rest else np.uint64(0)
            used = rest
        if used:
            _put(words, first, c, w - w0, w, acc)
    for c in range(starts.size):               # in order: shared words are OR-ed serially
        words[starts[c] >> 6] |= first[c]


def encode(symbols: np.ndarray, lengths: np.ndarray, sync: int,
           freq: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Huffman-code ``symbols`` (ints in [0, len(lengths))) with the canonical code of
    ``lengths`` -> (stream bytes (uint8), sync points (uint32 bit offsets of symbols
    0, sync, 2 sync, ...)). ``freq`` (the symbols' histogram) saves a pass when known."""
    symbols = np.ascontiguousarray(symbols).reshape(-1)
    n = symbols.size
    lengths = np.asarray(lengths, dtype=np.int64)
    if freq is None:
        freq = np.bincount(symbols, minlength=lengths.size)
    if n and (lengths[np.flatnonzero(freq)] == 0).any():
        raise ValueError("a symbol to encode has no codeword (its code length is 0)")
    total = encoded_bits(freq, lengths)
    if total >= 1 << 32:
        raise ValueError(f"stream of {total} bits exceeds the 2**32-bit limit of uint32 sync points")
    packed = (canonical_codes(lengths).astype(_U64) << _U64(8)) | lengths.astype(_U64)
    bits = np.empty((n + sync - 1) // sync, dtype=np.int64)
    _chunk_bits(symbols, lengths, sync, bits)
    starts = np.cumsum(bits) - bits
    words = np.zeros(total // 64 + 2, dtype=_U64)
    _encode_chunks(symbols, packed, sync, starts, words)
    return words.astype(">u8").view(np.uint8)[: (total + 7) // 8], starts.astype(np.uint32)


def _table(lengths: np.ndarray, codes: np.ndarray, t: int) -> np.ndarray:
    """Entry k of the 2**t table: (symbol << 8) | length of the codeword that the t-bit
    value k starts with, or 0 when that codeword is longer than t bits."""
    table = np.zeros(1 << t, dtype=np.uint32)
    short = np.flatnonzero((lengths > 0) & (lengths <= t))
    if short.size:
        span = np.left_shift(1, t - lengths[short])
        first = codes[short].astype(np.int64) << (t - lengths[short])
        owner = np.repeat(np.arange(short.size), span)
        slots = np.repeat(first - np.cumsum(span) + span, span) + np.arange(int(span.sum()))
        table[slots] = (short[owner].astype(np.uint32) << 8) | lengths[short][owner].astype(np.uint32)
    return table


class _Canonical:
    """Canonical decoding tables of a ``maxlen``-bit left-justified window (for codewords
    longer than the lookup table's ``T`` bits)."""

    def __init__(self, lengths: np.ndarray, codes: np.ndarray):
        self.maxlen = int(lengths.max())
        order = np.lexsort((np.arange(lengths.size), lengths))
        self.order = order[lengths[order] > 0].astype(np.int64)
        used = np.unique(lengths[self.order])
        self.lens = used.astype(np.int64)
        first_rank = np.searchsorted(lengths[self.order], used)            # rank of each length's first code
        count = np.diff(np.append(first_rank, self.order.size))
        self.first_code = codes[self.order[first_rank]].astype(np.int64)
        self.first_rank = first_rank.astype(np.int64)
        # exclusive upper limit of each length's codes, left-justified to maxlen bits
        self.limit = (self.first_code + count) << (self.maxlen - used)


@njit(nogil=True, cache=True)
def _canonical_entry(window, limit, lens, first_rank, first_code, order, maxlen):
    """(symbol << 8) | length of the codeword ``window`` (``maxlen`` bits) starts with;
    0 when no codeword does (a corrupt stream)."""
    for k in range(limit.size):
        if window < limit[k]:
            ln = lens[k]
            rank = first_rank[k] + (window >> (maxlen - ln)) - first_code[k]
            if rank < 0 or rank >= order.size:  # lengths that are no prefix code
                return np.uint32(0)
            return (np.uint32(order[rank]) << np.uint32(8)) | np.uint32(ln)
    return np.uint32(0)


@njit(nogil=True, cache=True, inline="always")
def _entry(words, pos, table, drop, limit, lens, first_rank, first_code, order, maxlen):
    """(symbol << 8) | length of the codeword at bit ``pos``: the 64 bits from the 32-bit word
    holding ``pos``, shifted to it; its first bits looked up, or decoded canonically."""
    k = pos >> 5
    win = ((np.uint64(words[k]) << np.uint64(32)) | np.uint64(words[k + 1])) << np.uint64(pos & 31)
    e = table[win >> drop]
    if e == 0 and limit.size:
        e = _canonical_entry(np.int64(win >> np.uint64(64 - maxlen)), limit, lens, first_rank, first_code, order,
                             maxlen)
    return e


@njit(parallel=True, nogil=True, cache=True)
def _decode_chunks(words, syncs, sync, table, t, slow, out):
    """Decode chunk c (symbols c sync .. (c + 1) sync - 1) from bit ``syncs[c]``; returns the
    number of groups that met an invalid codeword. Parallel over groups of ``GROUP`` chunks;
    a thread decodes the chunks of a whole group in lockstep, one symbol of each per
    iteration, so their lookups (each waiting on the one before it in its chunk) overlap."""
    limit, lens, first_rank, first_code, order, maxlen = slow
    n = out.size
    chunks = syncs.size
    groups = (chunks + GROUP - 1) // GROUP
    drop = np.uint64(64 - t)
    bad = np.zeros(groups, np.int64)
    for g in prange(groups):
        c0 = g * GROUP
        if (c0 + GROUP) * sync <= n:           # four whole chunks
            p0, p1, p2, p3 = (np.int64(syncs[c0]), np.int64(syncs[c0 + 1]), np.int64(syncs[c0 + 2]),
                              np.int64(syncs[c0 + 3]))
            s0 = c0 * sync
            for i in range(s0, s0 + sync):
                e0 = _entry(words, p0, table, drop, limit, lens, first_rank, first_code, order, maxlen)
                e1 = _entry(words, p1, table, drop, limit, lens, first_rank, first_code, order, maxlen)
                e2 = _entry(words, p2, table, drop, limit, lens, first_rank, first_code, order, maxlen)
                e3 = _entry(words, p3, table, drop, limit, lens, first_rank, first_code, order, maxlen)
                if e0 == 0 or e1 == 0 or e2 == 0 or e3 == 0:
                    bad[g] = 1
                    break
                out[i] = e0 >> np.uint32(8)
                out[i + sync] = e1 >> np.uint32(8)
                out[i + 2 * sync] = e2 >> np.uint32(8)
                out[i + 3 * sync] = e3 >> np.uint32(8)
                p0 += e0 & np.uint32(255)
                p1 += e1 & np.uint32(255)
                p2 += e2 & np.uint32(255)
                p3 += e3 & np.uint32(255)
        else:                                  # the last group: one chunk at a time
            for c in range(c0, chunks):
                pos = np.int64(syncs[c])
                for i in range(c * sync, min(n, (c + 1) * sync)):
                    e = _entry(words, pos, table, drop, limit, lens, first_rank, first_code, order, maxlen)
                    if e == 0:
                        bad[g] = 1
                        break
                    out[i] = e >> np.uint32(8)
                    pos += e & np.uint32(255)
    return bad.sum()


def decode(stream: np.ndarray, n: int, lengths: np.ndarray, syncs: np.ndarray, sync: int,
           out: np.ndarray | None = None) -> np.ndarray:
    """Inverse of ``encode``: the ``n`` symbols (uint16 or ``out``'s dtype)."""
    lengths = np.asarray(lengths, dtype=np.int64)
    if sync < 1:
        raise ValueError(f"sync={sync} must be >= 1")
    if n > 8 * stream.size:  # every symbol takes at least one bit: check before allocating n
        raise ValueError(f"{n} symbols cannot fit a stream of {stream.size} bytes")
    chunks = (n + sync - 1) // sync
    if syncs.size != chunks:
        raise ValueError(f"expected {chunks} sync points for {n} symbols, got {syncs.size}")
    out = np.empty(n, dtype=np.uint16) if out is None else out
    if n == 0:
        return out
    if not lengths.any():
        raise ValueError("no codewords: every code length is 0")
    if lengths.max() > MAX_LENGTH:
        raise ValueError(f"code lengths exceed {MAX_LENGTH}")
    codes = canonical_codes(lengths)
    maxlen = int(lengths.max())
    t = min(maxlen, TABLE_BITS)
    table = _table(lengths, codes, t)
    slow = _Canonical(lengths, codes) if maxlen > t else None
    # the stream as native 32-bit words, with zeros past the end for the chunks that run
    # over it in the last iterations (at most sync * maxlen bits)
    nw = (stream.size + 3) // 4 + (min(sync, n) * maxlen + 31) // 32 + 2
    padded = np.empty(nw * 4, dtype=np.uint8)
    padded[: stream.size] = stream
    padded[stream.size:] = 0
    words = padded.view(">u4").astype(np.uint32)
    del padded
    pos = syncs.astype(np.int64)
    if (pos >= 8 * stream.size + 1).any() or (np.diff(pos) < 0).any() or (pos < 0).any():
        raise ValueError("sync points are out of order or past the end of the stream")
    if slow is None:
        no = np.zeros(0, dtype=np.int64)
        slow_args = (no, no, no, no, no, t)
    else:
        slow_args = (slow.limit, slow.lens, slow.first_rank, slow.first_code, slow.order, slow.maxlen)
    if _decode_chunks(words, pos, sync, table, t, slow_args, out):
        raise ValueError("the stream holds a bit pattern that is no codeword")
    return out
