"""The Huffman bitstream (Oland & Raj 2015, Alg. 1 line 9 ``Encode`` and Alg. 2 line 3
``Decode``), as compiled kernels.

Layout: the canonical codewords of the symbols, most significant bit first, one after the
other with no padding between them; the last byte is zero-filled. Its length is exactly
``ceil(sum(freq * length) / 8)`` bytes. Beside it travel *sync points*: the bit offset
of every ``sync``-th symbol (uint32), which let the decoder work on all
``ceil(n / sync)`` chunks at once.

Encoding: a group of ``k`` codewords (``k`` a compile-time constant; byte symbols of a large
stream looked up two at a time: ``_variant``) is joined into one right-aligned word and
appended to a 64-bit register whose 8 bytes are stored big-endian in one unaligned store
(``bits.py``); the stream moves on by the register's whole bytes, with no branch deciding
when to write. With more than one thread each chunk's length in bits is summed first (the
sync points) and the chunks are encoded at once; a byte two chunks share is OR-ed afterwards.

Decoding, parallel over the chunks between sync points: per symbol, one unaligned 8-byte
load, a shift, and a lookup of the next ``TABLE_BITS`` bits in a table of entries
symbol << 8 | length; longer codewords are resolved canonically (length by comparison
with each length's last codeword, symbol by rank). A thread advances ``GROUP`` = 4 chunks in
lockstep, so four independent chains keep the core busy. The engine's README gives the speeds.
"""

from __future__ import annotations

import functools

import numba
import numpy as np
from numba import njit, prange

from .bits import load_big_endian, load_pair, store_big_endian
from .jit_cache import closure_kernel, keyed
from .huffman_code import MAX_LENGTH, canonical_codes

TABLE_BITS = 12   # at most 2**12 table entries (16 KiB: the first-level cache)
GROUP = 4         # chunks a decoding thread works on in lockstep
_U64 = np.uint64


def encoded_bits(freq: np.ndarray, lengths: np.ndarray) -> int:
    """sum(freq * length): the stream's length in bits."""
    return int(np.dot(np.asarray(freq, dtype=np.int64), np.asarray(lengths, dtype=np.int64)))


@njit(nogil=True, cache=True, inline="always")
def _append(acc, used, e):
    """``acc`` holds ``used`` bits, most significant first: append the codeword ``e``
    (codeword << 8 | length)."""
    used += np.int64(e & _U64(255))
    return acc | ((e >> _U64(8)) << _U64(64 - used)), used


@njit(nogil=True, cache=True, inline="always")
def _store_before(out, p, acc, used, last):
    """Store the register's whole bytes at byte ``p`` of ``out``, touching no byte from
    ``last`` on (8 bytes at once while they fit, else one at a time) -> (p, acc, used)."""
    if p + 8 <= last:
        store_big_endian(out, p, acc)
    else:
        for b in range(used >> 3):
            out[p + b] = np.uint8(acc >> _U64(56 - 8 * b))
    return p + (used >> 3), acc << _U64(used & 56), used & 7


@njit(nogil=True, inline="always")
def _one_entry(symbols, table, i, j):
    """The entry of symbol ``i + j``."""
    return table[symbols[i + j]]


@njit(nogil=True, inline="always")
def _pair_entry(symbols, table, i, j):
    """The entry of the symbol pair ``i + 2j``, ``i + 2j + 1`` (bytes): one 16-bit load."""
    return table[load_pair(symbols, i + 2 * j)]


@njit(nogil=True, cache=True)
def _fill_pairs(packed, pairs):
    """Entry ``b << 8 | a`` of ``pairs``: symbol ``a``'s codeword followed by ``b``'s,
    (joined codeword) << 8 | joined length, for the pair ``a, b`` that a little-endian
    16-bit load of two symbol bytes reads."""
    for b in range(packed.size):
        code_b, len_b = packed[b] >> _U64(8), packed[b] & _U64(255)
        for a in range(packed.size):
            pairs[b << 8 | a] = (((packed[a] >> _U64(8)) << len_b | code_b) << _U64(8)) | ((packed[a] & _U64(255)) + len_b)


@functools.lru_cache(maxsize=None)
@keyed
def _encoders(k: int, pairs: bool = False):
    """The encoding kernels for groups of ``k`` table entries (a compile-time constant,
    so the group's lookups unroll): of ``k`` symbols, or, with ``pairs``, of ``k`` pairs of
    byte symbols looked up in the pair table (``_fill_pairs``) with one 16-bit load each.

    A group's codewords are first joined into one right-aligned word (``word``, ``width``
    bits) that does not depend on the stream's state, so the groups' lookups overlap; the
    word is appended to a 64-bit register that then stores its 8 bytes at the stream's
    current byte (``store_big_endian``) and moves on by its whole bytes, keeping 0-7 bits.
    A group wider than 56 bits (long codewords) is appended one codeword at a time, from
    the one-symbol table ``packed``, as are the symbols after the last whole group."""
    entry = _pair_entry if pairs else _one_entry
    per = 2 * k if pairs else k   # symbols per group

    @closure_kernel(nogil=True)
    def run(symbols, table, packed, i, stop, out, p, acc, used, last):
        """Codewords ``i .. stop - 1`` into ``out`` from byte ``p`` on (the register ``acc``
        holds ``used`` bits of it), touching no byte from ``last`` on -> (p, acc, used)."""
        while i + per <= stop and p + 8 <= last:
            word, width = _U64(0), _U64(0)
            for j in range(k):
                e = entry(symbols, table, i, j)
                word = (word << (e & _U64(255))) | (e >> _U64(8))
                width += e & _U64(255)
            if width <= _U64(56):
                used += np.int64(width)
                acc |= word << _U64(64 - used)
                store_big_endian(out, p, acc)
                p, acc, used = p + (used >> 3), acc << _U64(used & 56), used & 7
            else:
                for j in range(per):
                    acc, used = _append(acc, used, packed[symbols[i + j]])
                    p, acc, used = _store_before(out, p, acc, used, last)
            i += per
        for j in range(i, stop):
            acc, used = _append(acc, used, packed[symbols[j]])
            p, acc, used = _store_before(out, p, acc, used, last)
        return p, acc, used

    @closure_kernel(nogil=True)
    def serial(symbols, table, packed, sync, out, starts):
        """One pass, in order; the stream's bit offset at every ``sync``-th symbol goes to
        ``starts``. ``out`` has 8 bytes of room past the stream."""
        n = symbols.size
        p, acc, used = 0, _U64(0), 0
        for c in range(starts.size):
            starts[c] = 8 * p + used
            p, acc, used = run(symbols, table, packed, c * sync, min(n, (c + 1) * sync), out, p, acc, used,
                               out.size)
        if used:
            store_big_endian(out, p, acc)

    @closure_kernel(parallel=True, nogil=True)
    def chunks(symbols, table, packed, sync, starts, ends, out, tails):
        """Chunk c writes its codewords into bits ``starts[c] .. ends[c]`` of ``out``, 8 bytes
        at a time while they stay inside its whole bytes, then byte by byte. A byte shared
        with the next chunk is not stored but put in ``tails[c]`` (zeros; its bits OR-ed in
        afterwards): no two chunks store to one byte. Arrays come in made: one made in a
        parallel function is a parallel region of its own."""
        n = symbols.size
        for c in prange(starts.size):
            p, acc, used = run(symbols, table, packed, c * sync, min(n, (c + 1) * sync), out, starts[c] >> 3,
                               _U64(0), np.int64(starts[c] & 7), ends[c] >> 3)
            if used:
                tails[c] = np.uint8(acc >> _U64(56))

    @closure_kernel(parallel=True, nogil=True)
    def chunk_bits(symbols, table, packed, sync, out):
        """The length in bits of chunk c's codewords -> ``out[c]``, summed a group at a time."""
        n = symbols.size
        for c in prange(out.size):
            i, stop, total = c * sync, min(n, (c + 1) * sync), _U64(0)
            while i + per <= stop:
                for j in range(k):
                    total += entry(symbols, table, i, j) & _U64(255)
                i += per
            for j in range(i, stop):
                total += packed[symbols[j]] & _U64(255)
            out[c] = total

    return serial, chunks, chunk_bits


# the compiled variants: (table entries per register store, of symbol pairs?)
VARIANTS = ((1, False), (2, False), (4, False), (1, True), (2, True))
PAIRS_FROM = 1 << 16    # byte symbols from which a stream is coded a pair per lookup
PAIR_MAX_LENGTH = 28    # two codewords and their joined length fit one uint64 entry


def _variant(symbols: np.ndarray, freq: np.ndarray, lengths: np.ndarray, pairs_from: int = PAIRS_FROM
             ) -> tuple[int, bool]:
    """Symbols per register store: 4 up to a mean length of 9 bits, 2 up to 18, else 1, so a
    group rarely exceeds the register's 56 free bits (it is then split). Byte symbols of a
    stream of at least ``pairs_from`` are looked up a pair at a time in a table of 2**16
    entries, built once per stream (512 KiB; on 25M Gaussian 8-bit symbols, one core:
    about 960 -> 1,450 M symbols/s), when no codeword is longer than ``PAIR_MAX_LENGTH``
    -> (table entries per store, pairs)."""
    mean = encoded_bits(freq, lengths) / max(1, int(np.sum(freq)))
    per = 4 if mean <= 9 else 2 if mean <= 18 else 1
    if (per > 1 and symbols.dtype == np.uint8 and symbols.size >= pairs_from
            and lengths.size <= 256 and int(lengths.max(initial=0)) <= PAIR_MAX_LENGTH):
        return per // 2, True
    return per, False


_LOADED = False


def _load_every_variant() -> None:
    """Run every encoder variant once on a few symbols, the first time anything is encoded,
    so a later message of another kind never loads (or compiles) a kernel while it is
    timed (``Codec.warm_up`` encodes once before timing starts)."""
    global _LOADED
    if _LOADED:
        return
    symbols, packed = np.zeros(8, np.uint8), np.array([1 << 8 | 1], dtype=_U64)
    table = np.zeros(1 << 16, dtype=_U64)
    _fill_pairs(packed, table)
    for k, pairs in VARIANTS:
        serial, chunked, chunk_bits = _encoders(k, pairs)
        serial(symbols, table, packed, 4, np.zeros(16, np.uint8), np.zeros(2, np.int64))
        chunked(symbols, table, packed, 4, np.array([0, 4]), np.array([4, 8]), np.zeros(16, np.uint8),
                np.zeros(2, np.uint8))
        chunk_bits(symbols, table, packed, 4, np.zeros(2, np.int64))
    _LOADED = True


def encode(symbols: np.ndarray, lengths: np.ndarray, sync: int, freq: np.ndarray | None = None,
           threads: int | None = None, pairs_from: int = PAIRS_FROM) -> tuple[np.ndarray, np.ndarray]:
    """Huffman-code ``symbols`` (ints in [0, len(lengths))) with the canonical code of
    ``lengths`` -> (stream bytes (uint8), sync points (uint32 bit offsets of symbols
    0, sync, 2 sync, ...)). ``freq`` (the symbols' histogram) saves a pass when known.
    One thread encodes in one pass; more (``threads``, default numba's count) first sum
    each chunk's bits, then encode the chunks at once. The bytes are the same either way, and
    whether byte symbols are looked up a pair at a time (streams of ``pairs_from`` or more)."""
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
    chunks = (n + sync - 1) // sync
    out = np.empty((total + 7) // 8 + 8, dtype=np.uint8)   # 8 bytes of room for the last store
    _load_every_variant()
    k, pairs = _variant(symbols, freq, lengths, pairs_from)
    table = packed
    if pairs:
        table = np.zeros(1 << 16, dtype=_U64)
        _fill_pairs(packed, table)
    serial, chunked, chunk_bits = _encoders(k, pairs)
    if (numba.get_num_threads() if threads is None else threads) == 1:
        starts = np.empty(chunks, dtype=np.int64)
        serial(symbols, table, packed, sync, out, starts)
    else:
        bits = np.empty(chunks, dtype=np.int64)
        chunk_bits(symbols, table, packed, sync, bits)
        ends = np.cumsum(bits)
        starts = ends - bits
        shared = ends[(ends & 7) != 0] >> 3               # bytes that end a chunk part-way
        out[shared] = 0
        tails = np.zeros(starts.size, np.uint8)
        chunked(symbols, table, packed, sync, starts, ends, out, tails)
        np.bitwise_or.at(out, shared, tails[(ends & 7) != 0])
    return out[: (total + 7) // 8], starts.astype(np.uint32)


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
    longer than the lookup table's ``T`` bits), packed into one int64 array for the kernel
    (``packed``): ``[k, maxlen, limit (k), lens (k), first_rank (k), first_code (k), order]``
    for the ``k`` code lengths in use. One array, not six, keeps the decoding loop's live
    values few enough for the registers (with the stores' unsigned indices below, a tenth
    faster than six arrays and signed indices)."""

    def __init__(self, lengths: np.ndarray, codes: np.ndarray):
        maxlen = int(lengths.max())
        order = np.lexsort((np.arange(lengths.size), lengths))
        order = order[lengths[order] > 0].astype(np.int64)
        used = np.unique(lengths[order])
        first_rank = np.searchsorted(lengths[order], used)            # rank of each length's first code
        count = np.diff(np.append(first_rank, order.size))
        first_code = codes[order[first_rank]].astype(np.int64)
        # exclusive upper limit of each length's codes, left-justified to maxlen bits
        limit = (first_code + count) << (maxlen - used)
        self.packed = np.concatenate([[used.size, maxlen], limit, used, first_rank, first_code,
                                      order]).astype(np.int64)

    NONE = np.zeros(2, dtype=np.int64)   # k = 0: every codeword fits the lookup table


@njit(nogil=True, cache=True)
def _canonical_entry(win, slow):
    """(symbol << 8) | length of the codeword the 64-bit window ``win`` starts with, from
    ``_Canonical.packed``; 0 when no codeword does (a corrupt stream) or ``k`` is 0."""
    k, maxlen = slow[0], slow[1]
    window = np.int64(win >> np.uint64(64 - maxlen)) if k else np.int64(0)
    symbols = slow.size - 2 - 4 * k
    for j in range(k):
        if window < slow[2 + j]:
            ln = slow[2 + k + j]
            rank = slow[2 + 2 * k + j] + (window >> (maxlen - ln)) - slow[2 + 3 * k + j]
            if rank < 0 or rank >= symbols:  # lengths that are no prefix code
                return np.uint32(0)
            return (np.uint32(slow[2 + 4 * k + rank]) << np.uint32(8)) | np.uint32(ln)
    return np.uint32(0)


@njit(nogil=True, cache=True, inline="always")
def _entry(padded, pos, table, drop, slow):
    """(symbol << 8) | length of the codeword at bit ``pos``: the 64 bits from the byte
    holding ``pos``, shifted to it; its first bits looked up, or decoded canonically."""
    win = load_big_endian(padded, pos >> 3) << np.uint64(pos & 7)
    e = table[win >> drop]
    if e == 0:
        e = _canonical_entry(win, slow)
    return e


@njit(parallel=True, nogil=True, cache=True)
def _decode_chunks(padded, syncs, sync, table, t, slow, out, bad):
    """Decode chunk c (symbols c sync .. (c + 1) sync - 1) from bit ``syncs[c]``; ``bad[g]``
    (zeros) set where group g met an invalid codeword. Parallel over groups of ``GROUP`` chunks;
    a thread decodes the chunks of a whole group in lockstep, one symbol of each per
    iteration, so their lookups (each waiting on the one before it in its chunk) overlap.
    The stores' indices are unsigned: a signed index costs a test for a negative one
    (numpy's wraparound) on every store."""
    n = out.size
    chunks = syncs.size
    drop = np.uint64(64 - t)
    step = np.uint64(sync)
    for g in prange(bad.size):
        c0 = g * GROUP
        if (c0 + GROUP) * sync <= n:           # four whole chunks
            p0, p1, p2, p3 = (np.int64(syncs[c0]), np.int64(syncs[c0 + 1]), np.int64(syncs[c0 + 2]),
                              np.int64(syncs[c0 + 3]))
            s0 = np.uint64(c0 * sync)
            for k in range(sync):
                i = s0 + np.uint64(k)
                e0 = _entry(padded, p0, table, drop, slow)
                e1 = _entry(padded, p1, table, drop, slow)
                e2 = _entry(padded, p2, table, drop, slow)
                e3 = _entry(padded, p3, table, drop, slow)
                if e0 == 0 or e1 == 0 or e2 == 0 or e3 == 0:
                    bad[g] = 1
                    break
                out[i] = e0 >> np.uint32(8)
                out[i + step] = e1 >> np.uint32(8)
                out[i + step + step] = e2 >> np.uint32(8)
                out[i + step + step + step] = e3 >> np.uint32(8)
                p0 += e0 & np.uint32(255)
                p1 += e1 & np.uint32(255)
                p2 += e2 & np.uint32(255)
                p3 += e3 & np.uint32(255)
        else:                                  # the last group: one chunk at a time
            for c in range(c0, chunks):
                pos = np.int64(syncs[c])
                for i in range(c * sync, min(n, (c + 1) * sync)):
                    e = _entry(padded, pos, table, drop, slow)
                    if e == 0:
                        bad[g] = 1
                        break
                    out[i] = e >> np.uint32(8)
                    pos += e & np.uint32(255)


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
    slow = _Canonical(lengths, codes).packed if maxlen > t else _Canonical.NONE
    # the stream with zeros past the end for the chunks that run over it in the last
    # iterations (at most sync * maxlen bits) and 8 bytes for the last window
    padded = np.empty(stream.size + (min(sync, n) * maxlen + 7) // 8 + 8, dtype=np.uint8)
    padded[: stream.size] = stream
    padded[stream.size:] = 0
    pos = syncs.astype(np.int64)
    if (pos >= 8 * stream.size + 1).any() or (np.diff(pos) < 0).any() or (pos < 0).any():
        raise ValueError("sync points are out of order or past the end of the stream")
    bad = np.zeros((chunks + GROUP - 1) // GROUP, np.uint8)
    _decode_chunks(padded, pos, sync, table, t, slow, out, bad)
    if bad.any():
        raise ValueError("the stream holds a bit pattern that is no codeword")
    return out
