"""Oland & Raj codecs: the Huffman bitstream, the bin quantizer, the entropy estimate,
the symbol coders and the self-contained package (Alg. 1 and 2)."""

import math

import numba
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from thinwire.codecs import BinQuantize, CodecState, CorruptMessageError, make_codec
from thinwire.policies import make_policy
from thinwire.engine.kernels import huffman_stream
from thinwire.engine.kernels import bitpack
from thinwire.engine.kernels.bits import load_big_endian, load_pair, store_big_endian
from thinwire.engine.kernels.bin_quantize import bin_centres, bin_codes, bin_pack, entropy_bits, estimate_entropy
from thinwire.engine.kernels.huffman_code import canonical_codes, code_lengths
from thinwire.codecs.entropy.symbol_coders import CODERS

from widths import every_width


def _reference_bits(symbols, lengths):
    codes = canonical_codes(lengths)
    return "".join(format(int(codes[s]), f"0{int(lengths[s])}b") for s in symbols)


@st.composite
def symbol_streams(draw):
    """Symbol streams of the three shapes the issue names: one symbol only, every one of
    2^N symbols, and very skewed (geometric) ones, plus arbitrary small alphabets."""
    bits = draw(st.integers(1, 10))
    kind = draw(st.sampled_from(["one", "all", "skewed", "any"]))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    n = draw(st.integers(1, 5000))
    if kind == "one":
        symbols = np.full(n, draw(st.integers(0, 2**bits - 1)))
    elif kind == "all":
        symbols = np.concatenate([np.arange(2**bits), rng.integers(0, 2**bits, n)])
    elif kind == "skewed":
        symbols = np.minimum(rng.geometric(draw(st.floats(0.3, 0.95)), n) - 1, 2**bits - 1)
    else:
        symbols = rng.integers(0, draw(st.integers(1, 2**bits)), n)
    return bits, symbols.astype(np.uint16)


@settings(max_examples=150, deadline=None)
@given(stream=symbol_streams(), sync=st.sampled_from([1, 7, 64, 1024]), threads=st.sampled_from([1, 2]),
       pairs=st.booleans())
def test_huffman_stream_round_trips_and_is_exactly_the_codewords(stream, sync, threads, pairs):
    bits, symbols = stream
    freq = np.bincount(symbols, minlength=2**bits)
    lengths = code_lengths(freq)
    if pairs and bits <= 8:  # byte symbols, looked up a pair at a time even in a short stream
        symbols = symbols.astype(np.uint8)
    data, syncs = huffman_stream.encode(symbols, lengths, sync, threads=threads,  # one pass, or by chunks
                                        pairs_from=0 if pairs else huffman_stream.PAIRS_FROM)
    total = int((freq * lengths).sum())
    assert data.size == (total + 7) // 8 == (huffman_stream.encoded_bits(freq, lengths) + 7) // 8
    expected = _reference_bits(symbols, lengths)  # every codeword, in every chunk (and group of chunks)
    got = "".join(format(int(b), "08b") for b in data)
    assert got[:len(expected)] == expected
    assert set(got[total:]) <= {"0"}
    starts = np.concatenate([[0], np.cumsum(lengths[symbols])])[:-1]
    assert np.array_equal(syncs, starts[::sync])
    assert np.array_equal(huffman_stream.decode(data, symbols.size, lengths, syncs, sync), symbols)
    used = freq[freq > 0] / freq.sum()
    entropy = float(-(used * np.log2(used)).sum())
    mean = total / symbols.size
    assert entropy - 1e-9 <= mean < entropy + 1 + 1e-9 or (used.size == 1 and mean == 1)


def test_huffman_stream_long_codewords_take_the_canonical_path():
    # Fibonacci frequencies give a code 30 bits deep: longer than the 16-bit table
    fib = [1, 1]
    while len(fib) < 31:
        fib.append(fib[-1] + fib[-2])
    freq = np.array(fib)
    lengths = code_lengths(freq)
    assert lengths.max() > huffman_stream.TABLE_BITS
    rng = np.random.default_rng(0)
    symbols = np.concatenate([np.arange(freq.size), rng.permutation(np.repeat(np.arange(freq.size), 3))])
    for threads in (1, 2):  # codeword pairs up to 59 bits: wider than the register's 56 free bits
        data, syncs = huffman_stream.encode(symbols, lengths, 16, threads=threads)
        got = "".join(format(int(b), "08b") for b in data)
        expected = _reference_bits(symbols, lengths)
        assert got[:len(expected)] == expected and set(got[len(expected):]) <= {"0"}
        assert np.array_equal(huffman_stream.decode(data, symbols.size, lengths, syncs, 16), symbols)


def test_pairs_of_byte_symbols_take_one_lookup_and_long_groups_split():
    """A large stream of bytes is coded a pair per lookup; a group of pairs wider than the
    register's 56 free bits is appended a codeword at a time. Fibonacci frequencies give
    codewords up to 24 bits."""
    fib = [1, 1]
    while len(fib) < 25:
        fib.append(fib[-1] + fib[-2])
    freq = np.array(fib)
    lengths = code_lengths(freq)
    assert 18 < lengths.max() <= huffman_stream.PAIR_MAX_LENGTH
    rng = np.random.default_rng(1)
    n = huffman_stream.PAIRS_FROM + 7   # an odd count: the last symbol has no pair
    symbols = rng.choice(freq.size, n, p=freq / freq.sum()).astype(np.uint8)
    symbols[100:140] = np.arange(40) % 4   # the four rarest symbols, back to back: 93 bits
    quads = symbols[200:2200].reshape(-1, 4)   # groups of 50 to 68 bits, at every offset
    quads[:, :2] = [0, 1]
    quads[:, 2:] = rng.integers(14, 25, (quads.shape[0], 2))
    freq = np.bincount(symbols, minlength=freq.size)
    assert huffman_stream._variant(symbols, freq, lengths) == (2, True)
    assert huffman_stream._variant(symbols.astype(np.uint16), freq, lengths) == (4, False)
    assert huffman_stream._variant(symbols[:-8], freq, lengths)[1] is False
    expected = _reference_bits(symbols, lengths)
    for threads in (1, 2):
        data, syncs = huffman_stream.encode(symbols, lengths, 1000, freq, threads=threads)
        got = "".join(format(int(b), "08b") for b in data)
        assert got[:len(expected)] == expected and set(got[len(expected):]) <= {"0"}
        assert np.array_equal(huffman_stream.decode(data, n, lengths, syncs, 1000), symbols)


def test_big_endian_words_at_any_byte_offset():
    """The bitstream's 8-byte loads and stores (``kernels/bits.py``) at every offset."""
    rng = np.random.default_rng(0)
    buf = rng.integers(0, 256, 40, dtype=np.uint8)
    words = rng.integers(0, 2**63, 9, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    for at in range(9):
        want = buf.copy()
        want[at:at + 8] = np.frombuffer(int(words[at]).to_bytes(8, "big"), dtype=np.uint8)
        got = buf.copy()
        _store_word(got, at, words[at])
        assert np.array_equal(got, want)
        assert _load_word(got, at) == words[at]
        assert _load_pair(got, at) == int(got[at]) | int(got[at + 1]) << 8


@numba.njit
def _store_word(buf, at, word):
    store_big_endian(buf, at, word)


@numba.njit
def _load_word(buf, at):
    return load_big_endian(buf, at)


@numba.njit
def _load_pair(buf, at):
    return load_pair(buf, at)


def test_huffman_stream_rejects_symbols_without_codewords_and_bad_syncs():
    lengths = np.array([1, 1, 0])
    with pytest.raises(ValueError, match="no codeword"):
        huffman_stream.encode(np.array([0, 2]), lengths, 8)
    data, syncs = huffman_stream.encode(np.array([0, 1, 1]), lengths, 2)
    with pytest.raises(ValueError, match="sync points"):
        huffman_stream.decode(data, 3, lengths, syncs[:1], 2)


@pytest.mark.parametrize("lengths", [[1, 0], [1, 2, 0, 0] + [0] * 12, [1] + [0] * 7 + [18] * 2])
def test_huffman_stream_rejects_bits_that_are_no_codeword(lengths):
    """An incomplete code (one symbol; or a long code whose table misses some windows)
    leaves bit patterns that start no codeword: decoding them is an error, not zeros."""
    lengths = np.array(lengths)
    n = 40
    ones = np.full((n * int(lengths.max()) + 7) // 8, 0xFF, dtype=np.uint8)
    with pytest.raises(ValueError, match="no codeword"):
        huffman_stream.decode(ones, n, lengths, np.zeros(1, dtype=np.uint32), 64)


def test_bin_quantizer_is_a_consistent_pair():
    w = torch.tensor([-1.0, -0.5, 0.0, 0.25, 1.0])
    codes = bin_codes(w, -1.0, 1.0, 2)
    assert codes.tolist() == [0, 1, 2, 2, 3]     # w_min -> bin 0, w_max -> bin 2^N - 1 (clamped)
    assert bin_centres(codes, -1.0, 1.0, 2).tolist() == [-0.75, -0.25, 0.25, 0.25, 0.75]
    x = torch.randn(10_000, generator=torch.Generator().manual_seed(3))
    lo, hi = float(x.min()), float(x.max())
    for bits in (1, 5, 8, 10, 16):
        back = bin_centres(bin_codes(x, lo, hi, bits), lo, hi, bits)
        assert float((back - x).abs().max()) <= (hi - lo) / 2 ** (bits + 1) + 1e-6  # + float32 rounding


@pytest.mark.parametrize("bits", every_width())
@settings(max_examples=8, deadline=None)
@given(n=st.integers(1, 3 * bitpack.CHUNK + 77), seed=st.integers(0, 99), centre=st.sampled_from([0.0, 1e4, -3e-3]))
def test_fused_quantize_and_pack_equals_quantize_then_pack(bits, n, seed, centre):
    x = centre + torch.randn(n, generator=torch.Generator().manual_seed(seed)) * max(abs(centre), 1.0) * 1e-3
    lo, hi = float(x.min()), float(x.max())
    codes = bin_codes(x, lo, hi, bits)
    assert torch.equal(bin_pack(x, lo, hi, bits), bitpack.pack(torch.from_numpy(codes), bits))
    back = bin_centres(codes, lo, hi, bits).double()
    float32_rounding = 2.0 ** -22 * max(abs(lo), abs(hi))  # the centres are float32
    assert float((back - x.double()).abs().max()) <= (hi - lo) / 2 ** (bits + 1) + float32_rounding


def test_quantizer_far_from_zero_and_over_a_subnormal_range():
    x = torch.tensor([1e4, 1e4 + 1 / 128, 1e4 + 2 / 128, 1e4 + 3 / 128])  # spacing 1/1024 at 1e4
    assert bin_codes(x, float(x[0]), float(x[-1]), 2).tolist() == [0, 1, 2, 3]
    step = float(torch.tensor(1e-45))  # the smallest subnormal: 2^16 / (2 step) overflows float32
    tiny = torch.tensor([0.0, step, 2 * step])
    assert bin_codes(tiny, 0.0, 2 * step, 16).tolist() == [0, 32768, 65535]


def test_constant_layer_and_nan_input():
    for spec in ("binquant(bits=9, coder='ans')", "binquant(bits=4)", "binquant(bits=4, coder='huffman')"):
        codec = make_codec(spec)
        layer = torch.full((5, 7), -0.125)
        assert torch.equal(codec.decode(codec.encode(layer, CodecState(0), "w")), layer)
        with pytest.raises(ValueError, match=r"'fc1.weight' contains NaN"):
            codec.encode(torch.tensor([0.0, math.nan]), CodecState(0), "fc1.weight")


def test_entropy_estimate_from_a_sample():
    assert entropy_bits(np.array([5, 5, 0, 5, 5])) == pytest.approx(2.0)
    assert entropy_bits(np.array([7])) == 0.0
    w = torch.rand(100_000, generator=torch.Generator().manual_seed(1))
    g = torch.Generator().manual_seed(0)
    assert estimate_entropy(w, 0.0, 1.0, 4, 0.03, g) == pytest.approx(4.0, abs=0.02)  # uniform: M bits
    assert estimate_entropy(w, 0.0, 1.0, 4, 1.0, g) == pytest.approx(4.0, abs=0.001)
    a = estimate_entropy(w, 0.0, 1.0, 6, 0.03, torch.Generator().manual_seed(5))
    b = estimate_entropy(w, 0.0, 1.0, 6, 0.03, torch.Generator().manual_seed(5))
    assert a == b


def test_adaptive_bits_follow_entropy_plus_floor_capped_at_ceiling():
    g = torch.Generator().manual_seed(0)
    uniform = torch.rand(50_000, generator=g)             # H(M=4) ~ 4 bits
    peaked = torch.randn(50_000, generator=g) ** 3        # mass in a few middle bins
    assert make_policy("entropy_bits(c=5, m=4, ceiling=10)").decide(0, "u", uniform).bits == 9
    assert make_policy("entropy_bits(c=5, m=4, ceiling=8)").decide(0, "u", uniform).bits == 8
    decision = make_policy("entropy_bits(c=5, m=4)").decide(0, "p", peaked)
    assert decision.entropy < 2 and decision.bits == math.ceil(decision.entropy + 5)


@pytest.mark.parametrize("coder", sorted(CODERS))
def test_package_decodes_from_bytes_alone(coder):
    w = torch.randn(392, 50, generator=torch.Generator().manual_seed(2)) * 0.1
    codec = BinQuantize(bits=0, coder=coder)
    state = CodecState(7)
    decision = make_policy("entropy_bits(c=5, m=4)", seed=7).decide(0, "fc2.weight", w)  # Alg. 1 lines 3-5
    message = bytes(codec.encode(w, state, "fc2.weight", decision))  # nothing else travels
    decoded = make_codec(codec.spec()).decode(message)     # a fresh codec, no state
    bits = state.last.bits
    assert 5 <= bits <= 9
    reference = BinQuantize(bits=bits)
    assert torch.equal(decoded, reference.decode(reference.encode(w)))
    damaged = bytearray(message)
    damaged[len(damaged) // 2] ^= 0xFF
    with pytest.raises(CorruptMessageError):
        codec.decode(damaged)


def test_huffman_message_size_is_the_codeword_bits_plus_a_small_header():
    w = torch.randn(784 * 392, generator=torch.Generator().manual_seed(4)) * 0.05
    codec = BinQuantize(bits=8, coder="huffman")
    message = codec.encode(w)
    codes = bin_codes(w, float(w.min()), float(w.max()), 8)
    freq = np.bincount(codes, minlength=256)
    stream_bytes = (int((freq * code_lengths(freq)).sum()) + 7) // 8
    sync_bytes = 4 * math.ceil(w.numel() / 1024)
    assert stream_bytes < len(message) <= stream_bytes + sync_bytes + 256 + 400
    raw = BinQuantize(bits=8, coder="raw").encode(w)
    assert len(message) < 0.9 * len(raw)


@pytest.mark.parametrize("n, dtype", [(500, torch.uint8), (20_000, torch.uint16), (1_100_000, torch.uint32)])
def test_ans_histogram_travels_in_the_narrowest_exact_dtype(n, dtype):
    w = torch.rand(n, generator=torch.Generator().manual_seed(n))  # 16 bins: counts about n / 16
    codes = bin_codes(w, float(w.min()), float(w.max()), 4)
    counts = np.bincount(codes, minlength=16)
    parts, meta = CODERS["ans"]().encode(codes, 4, counts)
    assert parts["counts"].dtype == dtype and parts["counts"].numpy().tolist() == counts.tolist()
    assert np.array_equal(CODERS["ans"]().decode(parts, meta, n, 4), codes)


@pytest.mark.parametrize("coder", sorted(CODERS))
def test_fractional_levels_quantize_to_their_bin_centres(coder):
    """A decision with ``levels`` L: codes over L bins in ceil(log2 L)-bit symbols, decoded at
    the bin centres lo + (hi - lo)(i + 1/2) / L; the message carries L."""
    from thinwire.policies import Decision
    x = torch.randn(20_000, generator=torch.Generator().manual_seed(5))
    codec = make_codec(f"binquant(bits=0, coder={coder!r})")
    state = CodecState(0)
    message = codec.encode(x, state, "w", Decision(bits=7, levels=100))
    y = codec.decode(message)
    lo, hi = float(x.min()), float(x.max())
    codes = bin_codes(x, lo, hi, 7, levels=100)
    assert int(codes.max()) == 99
    assert torch.equal(y, bin_centres(codes, lo, hi, 7, levels=100))
    assert float((x - y).abs().max()) <= (hi - lo) / 200 * (1 + 1e-5)
    assert state.last.bits == pytest.approx(math.log2(100))
    with pytest.raises(ValueError, match="levels=64 is not allowed"):
        codec.encode(x, CodecState(0), "w", Decision(bits=7, levels=64))


def test_forged_levels_raise_corrupt_message():
    from thinwire.engine import wire
    from thinwire.policies import Decision
    x = torch.randn(5_000, generator=torch.Generator().manual_seed(6))
    codec = make_codec("binquant(bits=0, coder='huffman')")
    message = codec.encode(x, CodecState(0), "w", Decision(bits=7, levels=100))
    _, payload = wire.unpack(message)

    def forge(levels):
        meta = {**payload.meta, "levels": levels}
        return wire.pack(codec.codec_id, codec.digest, torch.float32, (5_000,), type(payload)(dict(payload.parts), meta))

    for forged in (40, 200, 1.5, -1):
        with pytest.raises(CorruptMessageError, match="levels"):
            codec.decode(forge(forged))
    with pytest.raises(CorruptMessageError, match="out of range"):  # fits 7 bits, but codes up to 99 were sent
        codec.decode(forge(65))
    assert torch.equal(codec.decode(forge(100)), codec.decode(message))
