"""Gradient dropping (Aji & Heafield 2017): residual conservation, density, encodings,
quantized variants, the offset coding and the CPU kernel."""

import contextlib
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from thinwire.codecs import CodecState, CorruptMessageError, GradDrop, make_codec

from thinwire.engine import wire
from thinwire.engine.kernels.drop_pass import _drop_torch, drop_pass
from thinwire.engine.kernels import device
from thinwire.engine.kernels.offsets import decode_offsets, encode_offsets

PATHS = [contextlib.nullcontext, device.forced]  # host kernels; torch operations (a GPU's path)


def _gen(seed):
    return torch.Generator().manual_seed(seed)


@pytest.mark.parametrize("spec", ["graddrop(ratio=0.99)", "graddrop(ratio=0.9, threshold='exact')",
                                  "graddrop(ratio=0.99, scope='local', sampling='stride', encoding='index_value')",
                                  "graddrop(ratio=0.0)"])
def test_residual_is_conserved_exactly(spec):
    """gradient + old residual == sent + new residual, bit for bit, step after step."""
    codec, state = make_codec(spec), CodecState(0)
    state.set_segments("w", [(0, 3000, 100), (3000, 2000, 1)])
    old = torch.zeros(5000)
    for step in range(8):
        g = torch.randn(5000, generator=_gen(step)) * (1 + step)
        decoded = codec.decode(codec.encode(g, state, "w"), CodecState(1), "w")
        new = state.slot("w")["residual"]
        assert torch.equal(decoded + new, old + g)
        sent = decoded != 0
        assert torch.equal(new[sent], torch.zeros(int(sent.sum())))  # survivors leave the residual
        old = new.clone()


@pytest.mark.parametrize("bits,levels", [(1, "threshold"), (1, "global"), (1, "column"),
                                         (2, "threshold"), (2, "global"), (2, "column")])
def test_quantized_variants_keep_signs_and_conserve(bits, levels):
    codec = GradDrop(ratio=0.95, bits=bits, levels=levels)
    state = CodecState(0)
    state.set_segments("w", [(0, 4000, 40), (4000, 1000, 1)])
    old = torch.zeros(5000, dtype=torch.float64)
    for step in range(5):
        g = torch.randn(5000, generator=_gen(step))
        corrected = (old + g.double()).float()
        decoded = codec.decode(codec.encode(g, state, "w"), CodecState(1), "w")
        new = state.slot("w")["residual"]
        sent = decoded != 0
        assert 0 < int(sent.sum()) < 5000 * 0.2
        assert torch.equal(torch.sign(decoded[sent]), torch.sign(corrected[sent]))  # signs kept
        torch.testing.assert_close(decoded.double() + new.double(), old + g.double(), rtol=0, atol=1e-5)
        old = new.double()
        levels_used = decoded[sent].abs().unique()
        assert levels_used.numel() <= {"threshold": 2, "global": 1, "column": 41}[levels] * 2 * 2 ** (bits - 1)


def test_one_bit_threshold_levels_are_the_threshold():
    codec, state = GradDrop(ratio=0.9, bits=1, levels="threshold"), CodecState(0)
    x = torch.randn(20000, generator=_gen(1))
    message = codec.encode(x, state, "w")
    t = state.slot("w")["threshold"][0]
    y = codec.decode(message)
    assert torch.equal(y[y != 0].abs().unique(), t.reshape(1))
    assert bool((x[y != 0].abs() > t).all())


def test_column_levels_are_column_means_per_sign():
    codec, state = GradDrop(ratio=0.9, bits=1, levels="column", threshold="exact"), CodecState(0)
    x = torch.randn(200, 50, generator=_gen(2)) * torch.linspace(0.1, 10, 50)  # columns of different scale
    y = codec.decode(codec.encode(x, state, "w")).view(200, 50)
    kept = y != 0
    for j in range(50):
        for sign in (1, -1):
            mask = kept[:, j] & (torch.sign(x[:, j]) == sign)
            if mask.any():
                assert torch.allclose(y[mask, j], x[mask, j].mean().expand(int(mask.sum())))


def test_exact_threshold_hits_the_density():
    x = torch.randn(100_000, generator=_gen(3))
    for ratio in (0.9, 0.99, 0.999):
        state = CodecState(0)
        GradDrop(ratio=ratio, threshold="exact").encode(x, state, "w")
        assert state.last.kept == 100_000 - round(ratio * 100_000)


@pytest.mark.parametrize("sampling", ["random", "stride"])
def test_sampled_threshold_density_is_close_to_target(sampling):
    codec = GradDrop(ratio=0.99, sample=0.01, sampling=sampling)
    state, kept = CodecState(0), []
    for step in range(10):
        x = torch.randn(1_000_000, generator=_gen(step))
        codec.encode(x, state, f"w{step}")  # fresh residual each time: density of the draw itself
        kept.append(state.last.kept / 1_000_000)
    assert abs(np.mean(kept) - 0.01) / 0.01 < 0.10


def test_local_scope_thresholds_each_matrix():
    """A global threshold takes survivors from the large-scale matrix only; local ones
    take about 1% of each (Sec. 4, 'parameters may not be on a comparable scale')."""
    x = torch.cat([torch.randn(50_000, generator=_gen(4)) * 100, torch.randn(50_000, generator=_gen(5))])
    counts = {}
    for scope in ("global", "local"):
        state = CodecState(0)
        state.set_segments("w", [(0, 50_000, 1), (50_000, 50_000, 1)])
        codec = GradDrop(ratio=0.99, scope=scope, threshold="exact")
        y = codec.decode(codec.encode(x, state, "w"))
        counts[scope] = (int((y[:50_000] != 0).sum()), int((y[50_000:] != 0).sum()))
    assert counts["global"][1] == 0 and counts["global"][0] == 1000
    assert counts["local"] == (500, 500)


def test_both_encodings_decode_alike_and_offsets_are_smaller():
    x = torch.randn(200_000, generator=_gen(6))
    out = {}
    for encoding in ("index_value", "offset_value"):
        codec = GradDrop(ratio=0.99, threshold="exact", encoding=encoding)
        message = codec.encode(x, CodecState(0), "w")
        out[encoding] = (len(message), codec.decode(message), wire.measure(message)[0])
    assert torch.equal(out["index_value"][1], out["offset_value"][1])
    kept = int((out["index_value"][1] != 0).sum())
    assert out["index_value"][0] > 8 * kept  # int32 index + fp32 value + header
    # the paper's implied cost: payload is 8 bytes per survivor plus a few meta bytes per message
    assert 8 * kept < out["index_value"][2] <= 8 * kept + 64
    assert out["offset_value"][0] < 5.6 * kept  # ~1.3 bytes of gap + 4 of value


def test_non_finite_gradients_are_rejected():
    for bad in (math.nan, math.inf):
        x = torch.randn(5000, generator=_gen(7))
        x[1234] = bad
        with pytest.raises(ValueError, match="NaN or Inf"):
            GradDrop(ratio=0.99).encode(x)


@pytest.mark.parametrize("ties", ["drop", "keep"])
@pytest.mark.parametrize("encoding", ["offset_value", "index_value"])
def test_non_finite_survivors_are_refused_and_finite_ones_at_float32s_limit_are_not(ties, encoding):
    """The survivors' check (the bits of their float64 sum) on the host and the device path:
    NaN, Inf and -Inf refused with the residual untouched; finite values whose float32 sum
    would overflow encode."""
    for context in (contextlib.nullcontext, device.forced):
        codec, state = GradDrop(ratio=0.99, ties=ties, encoding=encoding), CodecState(0)
        with context():
            codec.encode(torch.randn(5000, generator=_gen(3)), state, "w")
            residual = state.slots["w"]["residual"].clone()
            for bad in (math.nan, math.inf, -math.inf):
                x = torch.randn(5000, generator=_gen(7))
                x[1234] = bad
                with pytest.raises(ValueError, match="NaN or Inf"):
                    codec.encode(x, state, "w")
                assert torch.equal(state.slots["w"]["residual"], residual)
            big = torch.full((5000,), 3.4e38)
            big[::3] = -3.4e38
            message = codec.encode(big, CodecState(0), "w")
            assert torch.isfinite(codec.decode(message)).all()


@pytest.mark.parametrize("kwargs,match", [({"ratio": 1.0}, "^graddrop: ratio=1.0"), ({"bits": 3}, "bits=3"),
                                          ({"scope": "layer"}, "scope='layer'"),
                                          ({"ratio": 0.0, "bits": 1}, "ratio=0.0"), ({"ties": "split"}, "ties='split'")])
def test_bad_parameters_name_the_parameter(kwargs, match):
    with pytest.raises(ValueError, match=match):
        GradDrop(**kwargs)


@settings(max_examples=60, deadline=None)
@given(gaps=st.lists(st.one_of(st.integers(1, 300), st.integers(1, 70_000), st.integers(1, 2**24)), max_size=300))
def test_offsets_round_trip(gaps):
    index = torch.tensor(np.cumsum(gaps, dtype=np.int64) - 1 if gaps else np.zeros(0, np.int64))
    numel = int(index[-1]) + 1 if gaps else 1
    width, words, escaped = encode_offsets(index)
    for path in PATHS:  # the host loops and the torch operations a GPU tensor takes
        with path():
            assert torch.equal(decode_offsets(width, words, escaped, len(gaps), numel), index)
            moved = encode_offsets(index)
        assert moved[0] == width and torch.equal(moved[1], words) and torch.equal(moved[2], escaped)


@settings(max_examples=40, deadline=None)
@given(gaps=st.lists(st.one_of(st.integers(1, 300), st.integers(1, 70_000)), max_size=300))
def test_offsets_words_are_the_gaps_with_escapes(gaps):
    """The compiled encoder against the definition: every gap below the escape is its own
    word; the others write the escape and go whole, in order, into the escaped part."""
    index = torch.tensor(np.cumsum(gaps, dtype=np.int64) - 1 if gaps else np.zeros(0, np.int64))
    width, words, escaped = encode_offsets(index)
    escape = (1 << width) - 1
    g = np.array(gaps, dtype=np.int64)
    assert np.array_equal(words.numpy().view({8: np.uint8, 16: np.uint16}[width]), np.minimum(g, escape))
    assert np.array_equal(escaped.numpy(), g[g >= escape])
    assert width == (8 if g.size + 4 * int((g >= 255).sum()) <= 2 * g.size + 4 * int((g >= 65535).sum()) else 16)


@pytest.mark.parametrize("path", PATHS)
def test_offsets_reject_gaps_below_one(path):
    width, words, escaped = encode_offsets(torch.tensor([3, 400, 100_000]))
    for bad in (0, -5):
        with path(), pytest.raises(CorruptMessageError, match="gap below 1"):
            decode_offsets(width, words, torch.full_like(escaped, bad), 3, 200_000)


@pytest.mark.parametrize("path", PATHS)
def test_offsets_reject_inconsistent_input(path):
    width, words, escaped = encode_offsets(torch.tensor([3, 400, 100_000]))
    with path(), pytest.raises(CorruptMessageError):
        decode_offsets(width, words, escaped, 2, 200_000)
    with path(), pytest.raises(CorruptMessageError, match="1 escapes but 0 long gaps"):
        decode_offsets(width, words, escaped[:0], 3, 200_000)
    with path(), pytest.raises(CorruptMessageError, match="1 escapes but 2 long gaps"):
        decode_offsets(width, words, escaped.repeat(2), 3, 200_000)
    with path(), pytest.raises(CorruptMessageError, match="0 escapes but 1 long gaps"):
        decode_offsets(width, words[:0], escaped, 0, 200_000)
    with path(), pytest.raises(CorruptMessageError, match="out of range"):
        decode_offsets(width, words, escaped, 3, 1000)


def test_cpu_kernel_matches_whole_tensor_torch_ops():
    g = torch.randn(300_000, generator=_gen(8))
    r0 = torch.randn(300_000, generator=_gen(9))
    segments = [(0, 100_000, 1.5), (100_000, 300_000, 2.5)]
    a, b = r0.clone(), r0.clone()
    index_a, values_a = drop_pass(a, g, segments)
    b.add_(g)
    index_b, values_b = _drop_torch(b, segments, True, False)
    assert torch.equal(index_a, index_b) and torch.equal(values_a, values_b) and torch.equal(a, b)


@pytest.mark.parametrize("on_cpu_kernel", [True, False])
def test_ties_at_the_threshold(on_cpu_kernel):
    """Half the values sit exactly on the threshold (AdaGrad's +-lr deltas): the strict
    test drops them all, ties='keep' sends them; zeros never survive a zero threshold."""
    x = torch.tensor([0.005, -0.005, 0.001, 0.02, 0.005, 0.0, -0.003, 0.005])
    segments = [(0, 4, 0.005), (4, 8, 0.0)]
    for inclusive, expected in ((False, [3, 4, 6, 7]), (True, [0, 1, 3, 4, 6, 7])):
        r = x.clone()
        index, values = (drop_pass(r, None, segments, keep_residual=False, inclusive=inclusive) if on_cpu_kernel
                         else _drop_torch(r, segments, False, inclusive))
        assert index.tolist() == expected and torch.equal(values, x[expected])


@pytest.mark.parametrize("threshold", ["exact", "sampled"])
@pytest.mark.parametrize("scope", ["global", "local"])
def test_a_constant_gradient_never_stalls(threshold, scope):
    """Every value ties at the top magnitude: the strict test alone sends nothing and the
    residual grows by 0.01 a step (0.5 after 50 steps). The default ties='drop' sends a
    stalled span's values at the threshold, so nothing waits and the mass is conserved."""
    codec = GradDrop(ratio=0.99, threshold=threshold, scope=scope)
    sender, receiver = CodecState(0), CodecState(0)
    sender.set_segments("g", [(0, 4_000, 40), (4_000, 6_000, 1)])
    g = torch.full((10_000,), 0.01)
    received = torch.zeros(10_000)
    for _ in range(50):
        received += codec.decode(codec.encode(g, sender, "g"), receiver, "g")
        assert sender.last.kept > 0
    residual = sender.slot("g")["residual"]
    assert float(residual.abs().max()) <= 0.01 + 1e-6
    assert torch.allclose(received + residual, g * 50, atol=1e-4)


def test_the_stall_rule_leaves_spans_with_survivors_alone():
    """One span stalls (all tied), the other has survivors under the strict test: only the
    stalled span's tied values are added; the other span keeps Alg. 1's strict result."""
    x = torch.cat([torch.full((1_000,), 0.5), torch.linspace(0.001, 1.0, 1_000)])
    codec = GradDrop(ratio=0.99, threshold="exact", scope="local", residual=False)
    state = CodecState(0)
    state.set_segments("x", [(0, 1_000, 1), (1_000, 1_000, 1)])
    sent = torch.nonzero(codec.decode(codec.encode(x, state, "x"))).squeeze(1)
    # span 2's threshold is its 990th smallest value: the strict test sends the top 10
    assert torch.equal(sent, torch.cat([torch.arange(1_000), torch.arange(1_990, 2_000)]))


def test_ties_keep_reaches_the_target_when_values_tie():
    g = torch.full((100_000,), 0.005)
    g[:500] = 0.01  # 0.5% above the tie, 99.5% tied: the 99th percentile is the tie
    strict = GradDrop(ratio=0.99, threshold="exact", residual=False)
    keep = GradDrop(ratio=0.99, threshold="exact", residual=False, ties="keep")
    s1, s2 = CodecState(0), CodecState(0)
    strict.encode(g, s1, "t"), keep.encode(g, s2, "t")
    assert s1.last.kept == 500 and s2.last.kept == 100_000
    assert s1.last.tied == 99_499  # counted exactly: the threshold value and 99,499 others
    sampled = CodecState(0)
    GradDrop(ratio=0.99, residual=False).encode(g, sampled, "t")
    assert abs(sampled.last.tied - 99_500) <= 1_000  # estimated from the 1000-value sample
    distinct = CodecState(0)
    GradDrop(ratio=0.99, residual=False).encode(torch.randn(100_000, generator=_gen(3)), distinct, "t")
    assert distinct.last.tied == 0
    assert torch.equal(keep.decode(keep.encode(g, CodecState(0), "t"), None, "t"), g)


@pytest.mark.parametrize("density", [1e-4, 0.01, 1.0])
@pytest.mark.parametrize("inclusive", [False, True])
def test_the_compiled_drop_pass_matches_whole_tensor_torch_operations(density, inclusive):
    """``drop_pass``'s kernel (blocks, per-chunk slots, the rest of a chunk that overflows
    them) against the same steps as whole-tensor torch operations, with ties, NaN-free
    segments of several thresholds, with and without a gradient to add."""
    g = torch.Generator().manual_seed(7)
    n = 600_001
    for with_gradient, keep in ((True, True), (False, True), (False, False)):
        residual = torch.randint(-4, 5, (n,), generator=g).float() * 0.5
        gradient = torch.randn(n, generator=g) if with_gradient else None
        segments = [(0, 100_000, 1.0), (100_000, 300_000, 0.0), (300_000, 500_000, -float("inf")), (500_000, n, 1.5)]
        expected_residual = residual.clone() if gradient is None else residual + gradient
        expected = _drop_torch(expected_residual, segments, keep, inclusive)
        if not keep:
            expected_residual = residual.clone()
        index, values = drop_pass(residual, gradient, segments, keep, inclusive, density)
        assert torch.equal(index, expected[0]) and torch.equal(values, expected[1])
        assert torch.equal(residual, expected_residual)


@pytest.mark.parametrize("density", [1e-4, 0.01])
@pytest.mark.parametrize("offset", [0, 3])
def test_a_large_corrected_tensor_is_streamed_into_its_own_buffer_exactly(density, offset):
    """Large enough to be streamed out (``stream.STREAM_MIN_BYTES``), into a buffer apart
    from ``source`` and at an offset that is not a cache line's, with chunks that start off
    a line and chunks that overflow their slots (threshold -inf: every value survives): the
    same survivors and corrected tensor as whole-tensor torch operations, and ``source``
    untouched."""
    from thinwire.engine.kernels import stream
    g = torch.Generator().manual_seed(11)
    n = stream.STREAM_MIN_BYTES // 4 + 300_007
    source = torch.randint(-4, 5, (n,), generator=g).float() * 0.5
    gradient = torch.randn(n, generator=g)
    segments = [(0, 700_003, 1.0), (700_003, 900_000, -float("inf")), (900_000, 900_005, -float("inf")),
                (900_005, n, 2.0)]   # chunks starting off a cache line, and chunks that overflow
    kept = source.clone()
    corrected = torch.full((n + offset,), 7.0)[offset:]
    index, values = drop_pass(corrected, gradient, segments, True, False, density, source=source)
    expected_residual = source + gradient
    expected = _drop_torch(expected_residual, segments, True, False)
    assert torch.equal(index, expected[0]) and torch.equal(values, expected[1])
    assert torch.equal(corrected, expected_residual) and torch.equal(source, kept)


def test_sample_positions_go_to_a_device_as_int32_where_every_position_fits():
    from thinwire.codecs.sparsify.drop_threshold import narrowed
    positions = torch.tensor([0, 7, 2**31 - 1])
    assert narrowed(positions, 2**31).dtype == torch.int32
    assert torch.equal(narrowed(positions, 2**31).long(), positions)
    assert narrowed(positions, 2**31 + 1).dtype == torch.int64  # a span past int32's range keeps int64


def test_one_bit_signs_are_the_general_quantizers_codes_table_and_values():
    """``drop_quantize.signs`` (1 bit, one threshold for every group) makes what ``quantize``
    and ``dequantize`` make with that threshold in every group, on both paths."""
    from thinwire.engine.kernels.drop_quantize import dequantize, group_ids, quantize, signs
    values = torch.randn(3001, generator=_gen(7)) * 3
    index = torch.sort(torch.randperm(9000, generator=_gen(8))[:3001]).values
    segments = torch.tensor([[0, 4000, 1], [4000, 1000, 10], [5000, 4000, 4]])
    t = float(values.abs().min())
    for forced in (False, True):
        with device.forced() if forced else contextlib.nullcontext():
            groups, count = group_ids(index, segments, "threshold")
            codes, table = quantize(values, groups, count, 1, "threshold", torch.tensor([t] * 3))
            want = dequantize(codes, groups, table, 1)
            got_codes, got_table, got = signs(values, t, 3)
        assert torch.equal(got_codes, codes) and torch.equal(got_table, table), forced
        assert torch.equal(got.view(torch.int32), want.view(torch.int32)), forced


@pytest.mark.parametrize("path", PATHS)
def test_quantized_survivors_checks_are_read_together_and_each_names_its_fault(path):
    """With quantized values a message carries two checks, its indices' and its segments'
    cover of the tensor: read in one copy (``deferred.ReadTogether``), the first that fails
    raising its own error, and nothing decoded."""
    codec = GradDrop(ratio=0.99, bits=1, scope="local")
    state = CodecState(0)
    state.set_segments("w", [(0, 3_000, 30), (3_000, 7_000, 70)])
    x = torch.randn(10_000, generator=_gen(11))
    with path():
        payload = codec.compress(x, state, "w")
        assert torch.equal(codec.decompress(payload, 10_000, CodecState(0), "w"),
                           codec.decompress(payload, 10_000, CodecState(0), "w"))
        uncovered = dict(payload.parts, segments=payload.parts["segments"].clone())
        uncovered["segments"].view(-1, 3)[1, 1] += 1
        disordered = dict(uncovered, escapes=torch.full_like(payload.parts["escapes"], -5))
        for parts, fault in ((uncovered, "segments do not cover"), (disordered, "gap below 1")):
            forged = type(payload)(parts=parts, meta=payload.meta)
            with pytest.raises(CorruptMessageError, match=fault):
                codec.decompress(forged, 10_000, CodecState(0), "w")


@pytest.mark.parametrize("density", [1e-4, 1.0])
def test_the_host_pass_counts_the_nan_and_inf_it_keeps(density):
    """``drop_pass(counted=True)`` on the host: the survivors moved out of every chunk's
    slots in parallel (density 1: they all fit) or gathered with the rest of the chunks that
    overflow (1e-4, a threshold every value passes), the same as torch's operations find,
    and the third item is how many of them are NaN or Inf."""
    g = _gen(21)
    n = 700_001
    residual = torch.randn(n, generator=g)
    bad = torch.randint(0, n, (40,), generator=g)
    residual[bad[:15]] = float("nan")
    residual[bad[15:30]] = float("inf")
    residual[bad[30:]] = -float("inf")
    segments = [(0, 300_000, 1.0), (300_000, 300_000, 1.0), (300_000, n, -float("inf"))]
    index, values = _drop_torch(residual.clone(), segments, False, False)
    got_index, got_values, non_finite = drop_pass(residual.clone(), None, segments, False, False, density,
                                                  counted=True)
    assert torch.equal(got_index, index) and torch.equal(got_values.view(torch.int32), values.view(torch.int32))
    assert non_finite == int((~torch.isfinite(values)).sum()) == int((~torch.isfinite(residual[index])).sum()) > 0
    assert drop_pass(residual[:0].clone(), None, [], False, False, density, counted=True)[2] == 0


@pytest.mark.parametrize("levels", ["global", "threshold", "column"])
def test_survivor_groups_on_the_host_are_the_device_paths(levels):
    """``group_ids`` in numpy (the host) against its torch operations (the device path), on
    indices that include every segment's first and last entry."""
    from thinwire.engine.kernels.drop_quantize import group_ids
    segments = torch.tensor([[0, 12, 4], [12, 1, 1], [13, 30, 6], [43, 57, 19]], dtype=torch.int64)
    ends = [s for s, n, _ in segments.tolist()] + [s + n - 1 for s, n, _ in segments.tolist()]
    drawn = torch.randint(0, 100, (40,), generator=torch.Generator().manual_seed(4)).tolist()
    index = torch.tensor(sorted(set(ends + drawn)), dtype=torch.int64)
    host = group_ids(index, segments, levels)
    with device.forced():
        forced = group_ids(index, segments, levels)
    assert host[1] == forced[1] and torch.equal(host[0], forced[0].cpu())
