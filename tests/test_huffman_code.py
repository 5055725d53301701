"""Huffman code lengths and canonical codes (Oland & Raj 2015, Alg. 1 line 8)."""

import heapq
import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from thinwire.engine.kernels.huffman_code import MAX_LENGTH, canonical_codes, code_lengths


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
    assert code_lengths(np.array(fib + [fib[-1] + fib[-2]])).max() == MAX_LENGTH  # limited, not an error


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="freq must be >= 0"):
        code_lengths(np.array([3, -1]))
    with pytest.raises(ValueError, match="Kraft"):
        canonical_codes(np.array([1, 1, 1]))
    assert code_lengths(np.zeros(4, dtype=np.int64)).tolist() == [0, 0, 0, 0]


def _fibonacci(n):
    fib = [1, 1]
    while len(fib) < n:
        fib.append(fib[-1] + fib[-2])
    return np.array(fib[:n])


def test_length_limit_holds_and_costs_at_most_what_the_optimum_does():
    from thinwire.engine.kernels.huffman_code import package_merge
    counts = _fibonacci(34)  # 14,930,351 values: Huffman needs a 33-bit code
    unlimited = code_lengths(counts, max_length=64)
    assert unlimited.max() == 33
    limited = code_lengths(counts)
    assert limited.max() <= MAX_LENGTH and (2.0 ** -limited).sum() <= 1
    assert (counts * limited).sum() == (counts * unlimited).sum() + 1  # the cheapest way under the limit
    canonical_codes(limited)  # a valid prefix code
    rng = np.random.default_rng(0)
    for _ in range(200):  # package-merge against every length vector, small cases
        n = int(rng.integers(2, 7))
        limit = int(rng.integers(max(1, int(np.ceil(np.log2(n)))), 5))
        w = rng.integers(1, 50, n)
        best = min(sum(a * b for a, b in zip(w, ls)) for ls in itertools.product(range(1, limit + 1), repeat=n)
                   if sum(2.0 ** -x for x in ls) <= 1)
        got = package_merge(w, limit)
        assert got.max() <= limit and (w * got).sum() == best
    w = rng.integers(1, 10**6, 4096)  # when Huffman fits, the limited code costs the same
    assert (w * package_merge(w, 32)).sum() == (w * code_lengths(w)).sum()


def test_skewed_counts_encode_and_decode():
    import torch
    from thinwire.codecs import make_codec
    counts = _fibonacci(34)
    codes = np.repeat(np.arange(34), counts)
    np.random.default_rng(1).shuffle(codes)
    values = torch.from_numpy((codes * 0.5).astype(np.float32))  # 34 of 256 bins, centred
    codec = make_codec("binquant(bits=8, coder='huffman')")
    decoded = codec.decode(codec.encode(values))
    assert torch.equal(decoded, make_codec("binquant(bits=8, coder='raw')").decode(
        make_codec("binquant(bits=8, coder='raw')").encode(values)))
