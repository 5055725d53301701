"""Huffman code lengths and canonical codes (Oland & Raj 2015, Alg. 1 line 8)."""

import heapq

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from thinwire.codecs.entropy.huffman_code import MAX_LENGTH, canonical_codes, code_lengths


def _optimal_cost(freq):
    """Total bits of an optimal prefix code: the sum of every merge's weight."""
    heap = [int(f) for f in freq if f > 0]
    if len(heap) == 1:
        return heap[0]
    heapq.heapify(heap)
    cost = 0
    while len(heap) > 1:
        merged = heapq.heappop(heap) + heapq.heappop(heap)
        cost += merged
        heapq.heappush(heap, merged)
    return cost


def _prefix_free(lengths, codes):
    words = [format(int(c), f"0{int(n)}b") for c, n in zip(codes, lengths) if n > 0]
    return not any(a != b and b.startswith(a) for a in words for b in words)


frequencies = st.lists(st.integers(0, 10_000), min_size=1, max_size=64).filter(lambda f: sum(f) > 0)


@settings(max_examples=200, deadline=None)
@given(freq=frequencies)
def test_lengths_are_optimal_and_within_one_bit_of_entropy(freq):
    freq = np.array(freq)
    lengths = code_lengths(freq)
    assert int((freq * lengths).sum()) == _optimal_cost(freq)
    assert (lengths[freq == 0] == 0).all() and (lengths[freq > 0] > 0).all()
    p = freq[freq > 0] / freq.sum()
    entropy = float(-(p * np.log2(p)).sum())
    mean_length = float((freq * lengths).sum() / freq.sum())
    assert entropy - 1e-9 <= mean_length <= entropy + 1  # one symbol: 1 bit for entropy 0
    if (freq > 0).sum() > 1:
        assert mean_length < entropy + 1


@settings(max_examples=200, deadline=None)
@given(freq=frequencies)
def test_canonical_codes_are_prefix_free_and_complete(freq):
    lengths = code_lengths(np.array(freq))
    codes = canonical_codes(lengths)
    assert _prefix_free(lengths, codes)
    if (lengths > 0).sum() > 1:
        assert sum(2.0 ** -int(n) for n in lengths if n) == 1.0  # Huffman codes are complete


def test_one_symbol_all_symbols_and_a_skewed_source():
    one = code_lengths(np.array([0, 0, 7, 0]))
    assert one.tolist() == [0, 0, 1, 0] and canonical_codes(one).tolist() == [0, 0, 0, 0]
    uniform = code_lengths(np.full(256, 5))
    assert (uniform == 8).all()
    assert sorted(canonical_codes(uniform).tolist()) == list(range(256))
    fib = [1, 1]
    while len(fib) < MAX_LENGTH + 1:
        fib.append(fib[-1] + fib[-2])
    assert code_lengths(np.array(fib)).max() == MAX_LENGTH  # the deepest code that still fits
    with pytest.raises(ValueError, match="MAX_LENGTH"):
        code_lengths(np.array(fib + [fib[-1] + fib[-2]]))


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="freq must be >= 0"):
        code_lengths(np.array([3, -1]))
    with pytest.raises(ValueError, match="Kraft"):
        canonical_codes(np.array([1, 1, 1]))
    assert code_lengths(np.zeros(4, dtype=np.int64)).tolist() == [0, 0, 0, 0]
