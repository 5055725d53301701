"""Codec properties: round trips, byte counts, special values, error feedback, corruption."""

import contextlib
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from thinwire.codecs import CODECS, CodecState, CorruptMessageError, ErrorFeedback, TopK, make_codec

from thinwire.engine import wire

from widths import every_width

SPECS = [
    "fp32", "fp16", "bf16", "topk(ratio=0.1)", "topk(ratio=1.0)", "quantize(bits=1)", "quantize(bits=3)",
    "quantize(bits=8)", "quantize(bits=12)", "quantize(bits=16)", "ef(topk(ratio=0.01))",
    "ef(quantize(bits=2))", "chain(topk(ratio=0.1), quantize(bits=8))", "chain(topk(ratio=0.2), fp16)",
    "graddrop(ratio=0.9)", "graddrop(ratio=0.5, encoding='index_value', bits=2, levels='column')",
    "graddrop(ratio=0.8, bits=1, levels='global', residual=False, threshold='exact')",
    "binquant(bits=8, coder='raw')", "binquant(bits=5, coder='huffman')", "binquant(bits=12, coder='ans')",
    "qsgd(bits=8, bucket=512, norm='l2')", "qsgd(bits=3, bucket=7, norm='max')", "qsgd(bits=12, bucket=100)",
    "binquant(bits=4, coder='huffman', per='column')", "binquant(bits=2, per='row')",
    "sized(quantize(bits=8), min_numel=100)", "sized(binquant(bits=3, per='row'), min_numel=10, ndim=2, otherwise='fp16')",
    "colquant(bits=2)", "colquant(bits=8, eps=0.0)", "colquant(bits=9, max_floor=True)",
]

finite = arrays(np.float32, st.integers(0, 300),
                elements=st.floats(-1e4, 1e4, allow_nan=False, width=32))


def test_every_registered_codec_is_covered():
    # keycache sends the keys a policy decided: tests/test_slim_dp.py covers it, corruption included
    covered = {make_codec(s).name for s in SPECS} | {"chain", "ef", "keycache"}
    assert covered == {name for name, cls in CODECS.items() if cls.__module__.startswith("thinwire.")}


@pytest.mark.parametrize("spec", SPECS)
def test_spec_is_canonical(spec):
    codec = make_codec(spec)
    assert make_codec(codec.spec()).spec() == codec.spec()


@pytest.mark.parametrize("spec", SPECS)
@settings(max_examples=40, deadline=None)
@given(x=finite)
def test_round_trip_shape_dtype_and_byte_count(spec, x):
    codec = make_codec(spec)
    t = torch.from_numpy(x)
    msg = codec.encode(t, CodecState(1), "w")
    y = codec.decode(msg, CodecState(2), "w")
    assert y.shape == t.shape and y.dtype == t.dtype
    assert isinstance(msg, bytearray)
    header, payload = wire.unpack(msg)
    body = sum(p.numel() * p.element_size() for p in payload.parts.values())
    assert len(msg) >= body  # the counted bytes are the whole buffer, parts included


@settings(max_examples=60, deadline=None)
@given(x=finite)
def test_fp32_is_exact(x):
    t = torch.from_numpy(x)
    assert torch.equal(make_codec("fp32").decode(make_codec("fp32").encode(t)), t)


@pytest.mark.parametrize("bits", every_width())
@settings(max_examples=10, deadline=None)
@given(x=finite)
def test_quantize_error_bound(x, bits):
    t = torch.from_numpy(x)
    codec = make_codec(f"quantize(bits={bits})")
    y = codec.decode(codec.encode(t))
    if t.numel():
        lo, hi = float(t.min()), float(t.max())
        bound = (hi - lo) / (2 * (2**bits - 1)) + 1e-6 * max(1.0, abs(lo), abs(hi))
        assert float((t - y).abs().max()) <= bound


@settings(max_examples=60, deadline=None)
@given(x=finite, ratio=st.floats(0.001, 1.0))
def test_topk_keeps_the_largest(x, ratio):
    t = torch.from_numpy(x)
    codec = TopK(ratio)
    y = codec.decode(codec.encode(t))
    k = codec.k_for(t.numel())
    assert int((y != 0).sum()) <= k
    kept = y != 0
    if kept.any() and (~kept).any():
        assert float(t[kept].abs().min()) >= float(t[~kept].abs().max())
    assert torch.equal(y[kept], t[kept])


def test_byte_counts_are_buffer_lengths_and_scale_as_expected():
    x = torch.randn(100_000)
    fp32 = len(make_codec("fp32").encode(x))
    q8 = len(make_codec("quantize(bits=8)").encode(x))
    q1 = len(make_codec("quantize(bits=1)").encode(x))
    top = len(make_codec("topk(ratio=0.01)").encode(x))
    assert 400_000 < fp32 < 400_400
    assert 100_000 < q8 < 100_400
    assert 12_500 < q1 < 12_900
    assert 8_000 < top < 8_400  # 1000 x (int32 + fp32)


@pytest.mark.parametrize("spec", SPECS)
@pytest.mark.parametrize("values", [[], [3.5], [0.0] * 17, [2.25] * 9], ids=["empty", "one", "zeros", "constant"])
def test_special_inputs(spec, values):
    t = torch.tensor(values, dtype=torch.float32)
    codec = make_codec(spec)
    y = codec.decode(codec.encode(t))
    assert y.shape == t.shape
    if codec.name in ("fp32", "fp16", "bf16", "quantize", "ef", "binquant", "oland_raj"):
        assert torch.equal(y, t) or codec.name == "ef"


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_inputs(bad):
    t = torch.tensor([1.0, bad, 2.0])
    for spec in ("quantize(bits=8)", "topk(ratio=0.5)", "chain(topk(ratio=0.5), quantize(bits=4))", "binquant(bits=5, coder='huffman')",
                 "binquant(bits=4)", "qsgd(bits=8)", "qsgd(bits=4, norm='max')"):
        with pytest.raises(ValueError, match="NaN or Inf"):
            make_codec(spec).encode(t)
    y = make_codec("fp32").decode(make_codec("fp32").encode(t))  # defined: passes through bit-exactly
    assert torch.equal(y.isnan(), t.isnan()) and torch.equal(y[~t.isnan()], t[~t.isnan()])


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_topk_finds_a_non_finite_value_outside_its_magnitude_order(bad):
    """topk checks only the k values it selects: one NaN or Inf among 100,000 values of
    large magnitude, at any position, must still be among them and be refused."""
    g = torch.Generator().manual_seed(1)
    for position in (0, 31_337, 99_999):
        t = torch.randn(100_000, generator=g) * 1e30
        t[position] = bad
        with pytest.raises(ValueError, match="NaN or Inf"):
            make_codec("topk(ratio=0.00001)").encode(t)


@pytest.mark.parametrize("inner", ["topk(ratio=0.05)", "quantize(bits=2)", "chain(topk(ratio=0.1), quantize(bits=4))"])
def test_error_feedback_conserves_mass(inner):
    codec = ErrorFeedback(make_codec(inner))
    state = CodecState(0)
    g = torch.Generator().manual_seed(0)
    total_in = torch.zeros(500, dtype=torch.float64)
    total_out = torch.zeros(500, dtype=torch.float64)
    for _ in range(20):
        x = torch.randn(500, generator=g)
        old = codec.residual(state, "w")
        old = torch.zeros(500) if old is None else old.clone()
        decoded = codec.decode(codec.encode(x, state, "w"))
        new = codec.residual(state, "w")
        # g + old residual == sent + new residual (float32 rounding of one subtraction at most)
        torch.testing.assert_close(decoded + new, x + old, rtol=0, atol=1e-6)
        total_in += x.double()
        total_out += decoded.double()
    torch.testing.assert_close(total_in, total_out + codec.residual(state, "w").double(), rtol=0, atol=1e-4)


def test_error_feedback_with_topk_is_exact():
    codec = ErrorFeedback(TopK(0.1))
    state = CodecState(0)
    x = torch.randn(1000, dtype=torch.float32)
    decoded = codec.decode(codec.encode(x, state, "w"))
    assert torch.equal(decoded + codec.residual(state, "w"), x)


@pytest.mark.parametrize("forced", [False, True])
@pytest.mark.parametrize("inner", ["topk(ratio=0.05)", "fp32", "quantize(bits=3)", "qsgd(bits=4)",
                                   "chain(topk(ratio=0.1), quantize(bits=4))"])
def test_error_feedback_in_its_buffers_is_the_definition(inner, forced):
    """Error feedback's steps in its reused buffers (the corrected tensor written into the
    residual before last, the decode into a buffer of its own, the subtraction in place)
    against steps 1-3 computed in fresh tensors with the inner codec alone: the same decoded
    values and the same residual, bit for bit, message after message; the caller's tensors
    untouched; on the device path, fp32's message (a view of the corrected tensor itself)
    sent as it was. A message refused in step 2 (x + residual overflows to Inf) leaves the
    residual as it was, and the next message is the definition's."""
    from thinwire.engine.kernels import device
    codec, state = ErrorFeedback(make_codec(inner)), CodecState(4)
    alone, alone_state, residual = make_codec(inner), CodecState(4), None
    g = torch.Generator().manual_seed(2)
    with device.forced() if forced else contextlib.nullcontext():
        for step in range(6):
            x = torch.randn(3000, generator=g) * (step + 1)
            overflows = inner not in ("fp32", "qsgd(bits=4)")  # fp32 carries Inf; QSGD's norm would overflow
            if step == 2 and overflows:  # residuals near float32's largest
                x = torch.sign(x) * (1 + torch.rand(3000, generator=g)) * 1.5e38
            if step == 3 and overflows:  # the corrected tensor overflows where the residual is large: refused
                before = codec.residual(state, "w").clone()
                huge = torch.sign(before) * 3.4e38
                with pytest.raises(ValueError, match="NaN or Inf"):
                    codec.encode(huge, state, "w")
                assert torch.equal(codec.residual(state, "w"), before)
            kept = x.clone()
            decoded = codec.decode(codec.encode(x, state, "w"))
            corrected = x.clone() if residual is None else x + residual
            want = alone.decode(alone.encode(corrected, alone_state, "w"))
            residual = corrected - want
            assert torch.equal(x, kept), step
            assert torch.equal(decoded, want) and torch.equal(codec.residual(state, "w"), residual), step


@pytest.mark.parametrize("spec", SPECS)
def test_every_flipped_byte_is_detected(spec):
    codec = make_codec(spec)
    msg = codec.encode(torch.randn(64, generator=torch.Generator().manual_seed(3)), CodecState(0), "w")
    for pos in range(len(msg)):
        bad = bytearray(msg)
        bad[pos] ^= 0x5A
        with pytest.raises(CorruptMessageError):
            codec.decode(bad, CodecState(0), "w")


@pytest.mark.parametrize("spec", ["fp32", "quantize(bits=8)", "topk(ratio=0.1)"])
def test_truncated_or_foreign_messages_are_rejected(spec):
    codec = make_codec(spec)
    msg = codec.encode(torch.randn(100))
    for cut in (0, 3, 11, len(msg) // 2, len(msg) - 1):
        with pytest.raises(CorruptMessageError):
            codec.decode(msg[:cut])
    with pytest.raises(CorruptMessageError, match="encoded by"):
        make_codec("fp16").decode(msg)


def test_flipped_byte_in_a_large_message_is_detected():
    codec = make_codec("quantize(bits=8)")
    msg = codec.encode(torch.randn(9_000_000))
    bad = bytearray(msg)
    bad[len(msg) // 2] ^= 1
    with pytest.raises(CorruptMessageError):
        codec.decode(bad)


def test_state_saves_and_restores():
    codec = ErrorFeedback(TopK(0.1))
    a = CodecState(5)
    codec.encode(torch.randn(100), a, "w")
    b = CodecState(0)
    b.load_state_dict(a.state_dict())
    x = torch.randn(100)
    assert codec.encode(x, a, "w") == codec.encode(x, b, "w")
    assert torch.equal(torch.rand(3, generator=a.generator), torch.rand(3, generator=b.generator))


@pytest.mark.parametrize("spec,match", [
    ("nope", "unknown codec"), ("topk(ratio=2)", "ratio"), ("quantize(bits=0)", "bits"),
    ("quantize(bits=x)", "literals"), ("chain(fp32)", "at least two"), ("1+", "name"),
    ("graddrop(ratio=0.9, ratio=0.5)", "more than once"),
])
def test_bad_specs_name_the_problem(spec, match):
    with pytest.raises(ValueError, match=match):
        make_codec(spec)


@pytest.mark.parametrize("spec", ["fp32", "fp16", "topk(ratio=0.5)", "quantize(bits=8)", "graddrop(ratio=0.5)",
                                  "binquant(bits=6, coder='ans')", "ef(topk(ratio=0.5))"])
def test_values_outside_float32_are_an_error_not_an_inf(spec):
    codec, state = make_codec(spec), CodecState(0)
    huge = torch.tensor([1.0, 1e300, -2.0], dtype=torch.float64)
    with pytest.raises(ValueError, match="beyond float32's range"):
        codec.encode(huge, state, "w")
    assert "residual" not in state.slots.get("w", {})  # nothing kept for later either
    with pytest.raises(ValueError, match="complex"):
        codec.encode(torch.ones(3, dtype=torch.complex64), state, "w")
    fine = torch.tensor([1.0, 3e38, -2.0], dtype=torch.float64)  # within float32's range: encodes
    assert codec.decode(codec.encode(fine, CodecState(0), "w")).shape == (3,)


def test_bf16_rounds_to_nearest_bfloat16_and_keeps_float32_range():
    x = torch.tensor([1e38, -3e-38, 1.0 + 2**-8, 1.0 + 3 * 2**-8, 65504.0 * 4, math.inf])
    codec = make_codec("bf16")
    message = codec.encode(x)
    assert wire.measure(message)[0] == 2 * x.numel()
    y = codec.decode(message)
    assert torch.equal(y, x.to(torch.bfloat16).float())
    assert torch.isfinite(y[:5]).all() and y[2] == 1.0 and y[3] == 1.0 + 2**-6  # halfway: to the even mantissa
