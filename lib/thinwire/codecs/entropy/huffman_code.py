"""Huffman code lengths and canonical codewords (Oland & Raj 2015, Alg. 1 line 8 and
Alg. 2 line 2: ``HuffmanCodebook(P)``).

The receiver rebuilds the codebook from the message alone, so only the code *lengths*
travel: canonical codes are a function of the lengths (sorted by length, then symbol;
each code is the previous one plus one, shifted left when the length grows). Lengths come
from Huffman's merge of the two least frequent nodes, tie-broken by a counter so that the
same frequencies always give the same lengths.
"""

from __future__ import annotations

import heapq

import numpy as np

MAX_LENGTH = 32  # codewords must fit a uint32 for the table-driven coder


def code_lengths(freq: np.ndarray) -> np.ndarray:
    """Huffman code length (bits) of each symbol; 0 for symbols of frequency 0.

    A single used symbol gets length 1 (a code needs at least one bit per symbol).
    Raises ``ValueError`` for negative frequencies or a code longer than ``MAX_LENGTH``.
    """
    freq = np.asarray(freq)
    if freq.ndim != 1:
        raise ValueError(f"freq must be 1-D, got shape {freq.shape}")
    if freq.size and freq.min() < 0:
        raise ValueError("freq must be >= 0 everywhere")
    lengths = np.zeros(freq.size, dtype=np.int64)
    used = np.flatnonzero(freq)
    if used.size == 0:
        return lengths
    if used.size == 1:
        lengths[used] = 1
        return lengths
    # Heap of (weight, tie-break, node); leaves are symbols, inner nodes index `children`.
    heap = [(int(freq[s]), i, ("leaf", int(s))) for i, s in enumerate(used)]
    heapq.heapify(heap)
    children: list[tuple] = []
    counter = len(heap)
    while len(heap) > 1:
        w1, _, a = heapq.heappop(heap)
        w2, _, b = heapq.heappop(heap)
        children.append((a, b))
        heapq.heappush(heap, (w1 + w2, counter, ("node", len(children) - 1)))
        counter += 1
    stack = [(heap[0][2], 0)]
    while stack:
        (kind, ref), depth = stack.pop()
        if kind == "leaf":
            lengths[ref] = depth
        else:
            a, b = children[ref]
            stack.append((a, depth + 1))
            stack.append((b, depth + 1))
    if lengths.max() > MAX_LENGTH:
        raise ValueError(f"a Huffman code of {int(lengths.max())} bits exceeds MAX_LENGTH={MAX_LENGTH}")
    return lengths


def canonical_codes(lengths: np.ndarray) -> np.ndarray:
    """Canonical codeword (as an unsigned integer, most significant bit first) per symbol;
    0 where the length is 0. Raises ``ValueError`` when the lengths violate Kraft's
    inequality (no prefix code has them)."""
    lengths = np.asarray(lengths, dtype=np.int64)
    codes = np.zeros(lengths.size, dtype=np.uint64)
    order = np.lexsort((np.arange(lengths.size), lengths))
    order = order[lengths[order] > 0]
    if order.size == 0:
        return codes
    if lengths.max() > MAX_LENGTH or lengths.min() < 0:
        raise ValueError(f"code lengths must be in [0, {MAX_LENGTH}]")
    kraft = sum(2.0 ** -int(n) for n in lengths[order])
    if kraft > 1.0 + 1e-12:
        raise ValueError(f"code lengths violate Kraft's inequality (sum 2^-l = {kraft:.6f} > 1)")
    code, previous = 0, int(lengths[order[0]])
    for rank, symbol in enumerate(order):
        n = int(lengths[symbol])
        if rank:
            code = (code + 1) << (n - previous)
        codes[symbol] = code
        previous = n
    return codes
