"""Huffman code lengths and canonical codewords (Oland & Raj 2015, Alg. 1 line 8 and
Alg. 2 line 2: ``HuffmanCodebook(P)``).

The receiver rebuilds the codebook from the message alone, so only the code *lengths*
travel: canonical codes are a function of the lengths (sorted by length, then symbol;
each code is the previous one plus one, shifted left when the length grows). Lengths come
from Huffman's merge of the two least frequent nodes, tie-broken by a counter so that the
same frequencies always give the same lengths.

Lengths are limited to ``MAX_LENGTH`` bits (the decoder's codeword register). Very skewed
counts (Fibonacci-like, which 34 used symbols and some 15M values can produce) make a
longer Huffman code; then the lengths come from package-merge (Larmore & Hirschberg 1990),
the optimal code under the limit. When Huffman's lengths fit, they are used unchanged.
"""

from __future__ import annotations

import heapq

import numpy as np

MAX_LENGTH = 32  # codewords must fit a uint32 for the table-driven coder


def code_lengths(freq: np.ndarray, max_length: int = MAX_LENGTH) -> np.ndarray:
    """Huffman code length (bits) of each symbol, at most ``max_length``; 0 for symbols of
    frequency 0. A single used symbol gets length 1 (a code needs at least one bit per
    symbol). Raises ``ValueError`` for negative frequencies."""
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
    if lengths.max() > max_length:
        lengths[used] = package_merge(freq[used], max_length)
    return lengths


def package_merge(weights: np.ndarray, limit: int) -> np.ndarray:
    """Optimal prefix-code lengths of at most ``limit`` bits for positive ``weights``
    (the coin collector's form of package-merge):

    1. list_1 = the symbols sorted by weight;
    2. list_k = merge(the symbols, the packages of adjacent pairs of list_(k-1));
    3. select the 2n - 2 lightest items of list_limit; a symbol's length is the number of
       selected items that contain it.
    Items are kept as (leaf symbol | package of two items of the previous list), so the
    counting walks back through the lists without materializing any symbol set.
    """
    w = np.asarray(weights, dtype=np.int64)
    n = w.size
    if n < 2:
        return np.ones(n, dtype=np.int64)
    if n > 1 << limit:
        raise ValueError(f"{n} symbols cannot have codes of at most {limit} bits")
    order = np.argsort(w, kind="stable")
    leaf_w = w[order]
    levels = []  # per list: (is_leaf, ref): ref = sorted leaf index, or package index into the previous list
    weight = leaf_w
    is_leaf, ref = np.ones(n, dtype=bool), np.arange(n)
    levels.append((is_leaf, ref))
    for _ in range(limit - 1):
        pairs = weight.size // 2
        package_w = weight[0:2 * pairs:2] + weight[1:2 * pairs:2]
        merged_w = np.concatenate([leaf_w, package_w])
        pick = np.argsort(merged_w, kind="stable")  # leaves first among equal weights
        weight = merged_w[pick]
        is_leaf = pick < n
        ref = np.where(is_leaf, pick, pick - n)
        levels.append((is_leaf, ref))
    take = np.zeros(weight.size, dtype=np.int64)
    take[:2 * n - 2] = 1
    counts = np.zeros(n, dtype=np.int64)
    for k in range(len(levels) - 1, -1, -1):
        is_leaf, ref = levels[k]
        np.add.at(counts, ref[is_leaf], take[is_leaf])
        if k == 0:
            break
        below = np.zeros(levels[k - 1][0].size, dtype=np.int64)  # packages pair disjoint items below
        below[2 * ref[~is_leaf]] = take[~is_leaf]
        below[2 * ref[~is_leaf] + 1] = take[~is_leaf]
        take = below
    lengths = np.empty(n, dtype=np.int64)
    lengths[order] = counts
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
