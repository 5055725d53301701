"""The Huffman bitstream (Oland & Raj 2015, Alg. 1 line 9 ``Encode`` and Alg. 2 line 3
``Decode``), vectorized.

Layout: the canonical codewords of the symbols, most significant bit first, one after the
other with no padding between them; the last byte is zero-filled. Its length is exactly
``ceil(sum(freq * length) / 8)`` bytes. Beside it travel *sync points*: the bit offset
of every ``sync``-th symbol (uint32), which let the decoder work on all
``ceil(n / sync)`` chunks at once.

Encoding (blocks of ``BLOCK`` symbols, so intermediates stay in cache):
1. gather each symbol's length and codeword; a cumulative sum gives its bit range;
2. place each codeword in the 64-bit big-endian word holding its first bit (a codeword
   that runs into the next word is split: its tail goes to that word);
3. OR together the pieces of each word (``bitwise_or.reduceat``: the symbols are in
   order, so each word's pieces are adjacent).

Decoding advances every chunk by one symbol per iteration ("lock-step"): read the 64 bits
starting at the chunk's 32-bit word, shift out the chunk's bit offset, and look the next
``T`` bits up in a table of ``2**T`` entries (symbol << 8 | length). Codewords longer than
``T`` (rare symbols) are resolved by canonical decoding: a comparison against the
left-justified last codeword of each length gives the length, and the codeword's rank
among those of its length gives the symbol.
"""

from __future__ import annotations

import numpy as np

from .huffman_code import MAX_LENGTH, canonical_codes

BLOCK = 1 << 14   # symbols per encode block
TABLE_BITS = 16   # at most 2**16 table entries (256 KiB)
_U64 = np.uint64


def encoded_bits(freq: np.ndarray, lengths: np.ndarray) -> int:
    """sum(freq * length): the stream's length in bits."""
    return int(np.dot(np.asarray(freq, dtype=np.int64), np.asarray(lengths, dtype=np.int64)))


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
    # one gather per symbol: codeword << 8 | length (codewords have <= 32 bits)
    packed = (canonical_codes(lengths).astype(_U64) << _U64(8)) | lengths.astype(_U64)
    words = np.zeros(total // 64 + 2, dtype=_U64)
    syncs = np.empty((n + sync - 1) // sync, dtype=np.uint32)
    b = min(BLOCK, max(n, 1))
    entry, length, end, word, spill, piece, shift = (np.empty(b, dtype=_U64) for _ in range(7))
    fits = np.empty(b, dtype=bool)
    bit = 0
    for s0 in range(0, n, BLOCK):
        m = min(BLOCK, n - s0)
        e, ln, en, w, sp, pc, sh, ft = (a[:m] for a in (entry, length, end, word, spill, piece, shift, fits))
        np.take(packed, symbols[s0:s0 + m].astype(np.intp), out=e)
        np.bitwise_and(e, _U64(255), out=ln)
        np.right_shift(e, _U64(8), out=e)                 # e: codewords now
        np.cumsum(ln, out=en)
        en += _U64(bit)                                    # en: bit after each codeword
        np.subtract(en, ln, out=w)                         # w: first bit of each codeword
        first = -s0 % sync
        syncs[(s0 + first) // sync:(s0 + m + sync - 1) // sync] = w[first::sync]
        np.right_shift(w, _U64(6), out=w)                  # w: its 64-bit word
        np.left_shift(w, _U64(6), out=sp)
        np.subtract(en, sp, out=sp)                        # sp: end offset within the word, 1..95
        np.less_equal(sp, _U64(64), out=ft)
        np.minimum(sp, _U64(64), out=sh)
        np.subtract(_U64(64), sh, out=sh)
        np.left_shift(e, sh, out=pc)                       # pc: the codeword where it fits
        cross = np.flatnonzero(~ft)
        if cross.size:                                     # head of a codeword split over two words
            pc[cross] = e[cross] >> (sp[cross] - _U64(64))
        starts = np.flatnonzero(w[1:] != w[:-1])
        starts += 1
        starts = np.concatenate(([0], starts))
        words[w[starts].astype(np.intp)] |= np.bitwise_or.reduceat(pc, starts)
        if cross.size:                                     # its tail, at the top of the next word
            words[w[cross].astype(np.intp) + 1] |= e[cross] << (_U64(128) - sp[cross])
        bit = int(en[-1])
    stream = words.astype(">u8").view(np.uint8)[: (total + 7) // 8]
    return stream, syncs


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
    """Canonical decoding of a ``maxlen``-bit left-justified window (for long codewords)."""

    def __init__(self, lengths: np.ndarray, codes: np.ndarray):
        self.maxlen = int(lengths.max())
        order = np.lexsort((np.arange(lengths.size), lengths))
        self.order = order[lengths[order] > 0]
        used = np.unique(lengths[self.order])
        self.lens = used
        first_rank = np.searchsorted(lengths[self.order], used)            # rank of each length's first code
        count = np.diff(np.append(first_rank, self.order.size))
        self.first_code = codes[self.order[first_rank]].astype(np.int64)
        self.first_rank = first_rank
        # exclusive upper limit of each length's codes, left-justified to maxlen bits
        self.limit = (self.first_code + count) << (self.maxlen - used)

    def entries(self, window: np.ndarray) -> np.ndarray:
        """window: the next ``maxlen`` bits (int64) -> (symbol << 8) | length."""
        k = np.searchsorted(self.limit, window, side="right")
        ln = self.lens[k]
        rank = self.first_rank[k] + (window >> (self.maxlen - ln)) - self.first_code[k]
        return (self.order[rank].astype(np.uint32) << 8) | ln.astype(np.uint32)


def decode(stream: np.ndarray, n: int, lengths: np.ndarray, syncs: np.ndarray, sync: int,
           out: np.ndarray | None = None) -> np.ndarray:
    """Inverse of ``encode``: the ``n`` symbols (uint16 or ``out``'s dtype)."""
    lengths = np.asarray(lengths, dtype=np.int64)
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
    # the 64 bits starting at each 32-bit word, with zeros past the end for the chunks
    # that run over it in the last iterations (at most sync * maxlen bits)
    nw = (stream.size + 3) // 4 + (sync * maxlen + 31) // 32 + 2
    padded = np.zeros(nw * 4, dtype=np.uint8)
    padded[: stream.size] = stream
    w32 = padded.view(">u4").astype(_U64)
    window = w32[:-1] << _U64(32)
    window |= w32[1:]
    del w32, padded
    pos = syncs.astype(np.int64)
    if (pos >= 8 * stream.size + 1).any() or (np.diff(pos) < 0).any():
        raise ValueError("sync points are out of order or past the end of the stream")
    got = np.zeros((sync, chunks), dtype=np.uint32)
    idx, step = np.empty(chunks, dtype=np.int64), np.empty(chunks, dtype=np.int64)
    win = np.empty(chunks, dtype=_U64)
    drop = _U64(64 - t)
    for j in range(min(sync, n)):
        np.right_shift(pos, 5, out=idx)
        np.take(window, idx, out=win)
        np.bitwise_and(pos, 31, out=step)
        np.left_shift(win, step.view(_U64), out=win)
        e = got[j]
        if slow is None:
            np.right_shift(win, drop, out=win)
            np.take(table, win.view(np.int64), out=e)
        else:
            np.take(table, (win >> drop).view(np.int64), out=e)
            long = np.flatnonzero(e == 0)
            if long.size:
                e[long] = slow.entries((win[long] >> _U64(64 - slow.maxlen)).view(np.int64))
        np.bitwise_and(e, 255, out=step)
        pos += step
    flat = got.T.reshape(-1)[:n]
    np.right_shift(flat, 8, out=out, casting="unsafe")
    return out
