"""The rANS streams (``engine/kernels/rans.py``) against a reference written from the definitions
with Python integers, their size against the entropy, and corrupt streams."""

import numba
import numpy as np
import pytest

from thinwire.engine.kernels import rans


def reference(symbols: np.ndarray, counts: np.ndarray, chunk: int) -> tuple[list[int], list[int]]:
    """rANS by the module docstring's definitions, one stream per ``chunk`` symbols:
    frequencies 1 + floor(count (M - k) / n) with the rest to the (first) most frequent
    symbol; C(s, x) = (x // f) M + x mod f + c_s, the low word out first while x >= f 2**40;
    each stream its final state (high word first), then its words in reverse order of
    writing -> (words, offsets of the streams after the first)."""
    m, n = 1 << 24, int(counts.sum())
    used = [s for s in range(counts.size) if counts[s]]
    freq = [0] * counts.size
    for s in used:
        freq[s] = 1 + int(counts[s]) * (m - len(used)) // n
    freq[max(range(counts.size), key=lambda s: (counts[s], -s))] += m - sum(freq)
    cum = [sum(freq[:s]) for s in range(counts.size)]
    words, starts = [], []
    for start in range(0, symbols.size, chunk):
        x, out = 1 << 32, []
        for s in reversed(symbols[start: start + chunk].tolist()):
            if x >= freq[s] << 40:
                out.append(x & 0xFFFFFFFF)
                x >>= 32
            x = (x // freq[s]) * m + x % freq[s] + cum[s]
        assert (1 << 32) <= x < 1 << 64
        if start:
            starts.append(len(words))
        words += [x >> 32, x & 0xFFFFFFFF] + out[::-1]
    return words, starts


def _symbols(n, alphabet, seed, dtype=np.uint8, skew=4.0):
    rng = np.random.default_rng(seed)
    return np.minimum(rng.exponential(alphabet / skew, n), alphabet - 1).astype(dtype)


@pytest.mark.parametrize("n, alphabet, chunk", [(2, 2, 16), (1000, 32, 4096), (4 * 300, 32, 300),
                                                 (9 * 250 + 17, 5, 250), (5000, 300, 700)])
def test_streams_are_the_definitions(n, alphabet, chunk):
    """Whole groups of four streams in lockstep, a partial last group, a short last stream,
    and symbols with a count of 0 inside the used range."""
    symbols = _symbols(n, alphabet, n, np.uint16 if alphabet > 256 else np.uint8)
    symbols[:2] = [0, 1]
    counts = np.bincount(symbols, minlength=alphabet)
    words, starts = rans.encode(symbols, counts, chunk)
    want_words, want_starts = reference(symbols, counts, chunk)
    assert words.tolist() == want_words and starts.tolist() == want_starts
    out = np.empty(n, dtype=symbols.dtype)
    assert np.array_equal(rans.decode(words, starts, counts, n, chunk, out), symbols)


def test_frequencies_keep_every_used_symbol_and_sum_to_the_total():
    counts = np.array([0, 5, 0, 1, 10**9, 3, 0])
    freq = rans.frequencies(counts)
    assert freq.sum() == 1 << rans.PRECISION
    assert ((freq > 0) == (counts > 0)).all() and freq[1] >= 1 and freq[3] == 1
    with pytest.raises(ValueError, match="at least 2 used symbols"):
        rans.frequencies(np.array([0, 7, 0]))


@pytest.mark.parametrize("alphabet, dtype", [(256, np.uint8), (1 << 16, np.uint16)])
def test_size_is_within_a_fraction_of_a_percent_of_the_entropy(alphabet, dtype):
    n = 600_000
    rng = np.random.default_rng(1)
    symbols = np.clip(rng.normal(alphabet / 2, alphabet / 12, n), 0, alphabet - 1).astype(dtype)
    counts = np.bincount(symbols, minlength=alphabet)
    p = counts[counts > 0] / n
    entropy_bytes = -(p * np.log2(p)).sum() * n / 8
    words, starts = rans.encode(symbols, counts)
    streams = starts.size + 1
    assert streams == -(-n // rans.CHUNK)
    assert entropy_bytes <= 4 * words.size <= 1.002 * entropy_bytes + 8 * streams
    assert np.array_equal(rans.decode(words, starts, counts, n, rans.CHUNK, np.empty(n, dtype)), symbols)


def test_the_streams_are_the_same_whatever_the_threads():
    symbols = _symbols(9 * rans.CHUNK + 123, 40, 3)
    counts = np.bincount(symbols, minlength=40)
    made = []
    for threads in (1, numba.config.NUMBA_NUM_THREADS):
        numba.set_num_threads(threads)
        try:
            made.append(rans.encode(symbols, counts))
        finally:
            numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    assert np.array_equal(made[0][0], made[1][0]) and np.array_equal(made[0][1], made[1][1])


def _stream(n=4 * 500 + 90, chunk=500):
    symbols = _symbols(n, 16, 7)
    counts = np.bincount(symbols, minlength=16)
    words, starts = rans.encode(symbols, counts, chunk)
    return symbols, counts, words, starts, chunk


@pytest.mark.parametrize("where", [0, 1, 2, 40, -1])
def test_a_changed_word_is_caught(where):
    """In a lockstep group's stream (its state, its body), and in the last stream."""
    symbols, counts, words, starts, chunk = _stream()
    bad = words.copy()
    bad[where] ^= np.uint32(1 << 9)
    with pytest.raises(ValueError, match="do not decode to their ends"):
        rans.decode(bad, starts, counts, symbols.size, chunk, np.empty(symbols.size, np.uint8))


def test_streams_that_do_not_fit_are_refused():
    symbols, counts, words, starts, chunk = _stream()
    out = np.empty(symbols.size, np.uint8)
    with pytest.raises(ValueError, match="need 4 stream offsets, got 3"):
        rans.decode(words, starts[:-1], counts, symbols.size, chunk, out)
    with pytest.raises(ValueError, match="out of order"):
        rans.decode(words, starts[::-1].copy(), counts, symbols.size, chunk, out)
    with pytest.raises(ValueError, match="do not decode to their ends"):
        rans.decode(words[:-1], starts, counts, symbols.size, chunk, out)   # the last stream cut short
    with pytest.raises(ValueError, match="do not decode to their ends"):
        rans.decode(np.append(words, np.uint32(5)), starts, counts, symbols.size, chunk, out)
    with pytest.raises(ValueError, match="do not decode to their ends"):
        other = counts.copy()
        other[[0, 1]] += [1, -1]          # another model of the same n
        rans.decode(words, starts, other, symbols.size, chunk, out)
