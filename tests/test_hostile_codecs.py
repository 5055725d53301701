"""Inputs that used to decode to silently wrong values: integer and bool tensors through
lossy codecs, a float32 range wider than float32 holds, float16 values whose decode exceeds
float16's range."""

import pytest
import torch

from thinwire.codecs import CorruptMessageError, make_codec
from thinwire.codecs.state import CodecState

SPECS = ["fp32", "fp16", "bf16", "topk(ratio=0.5)", "quantize(bits=8)", "qsgd(bits=8)", "binquant(bits=4)",
         "binquant(bits=6, coder='huffman')", "graddrop(ratio=0.5)", "ef(topk(ratio=0.5))"]
NOT_FLOAT = [torch.tensor([127, -128, 5, 0], dtype=torch.int8), torch.tensor([False, True, False, True]),
             torch.tensor([1, 2, 3, 4], dtype=torch.uint16), torch.tensor([1, 2, 3, 4], dtype=torch.uint32),
             torch.tensor([1, 2, 3, 4], dtype=torch.int64)]


@pytest.mark.parametrize("spec", SPECS)
@pytest.mark.parametrize("x", NOT_FLOAT, ids=lambda x: str(x.dtype))
def test_integer_and_bool_tensors_are_refused_by_name(spec, x):
    codec = make_codec(spec)
    with pytest.raises(ValueError, match=rf"tensor 'w' has dtype {x.dtype}: codecs send floating-point"):
        codec.encode(x, CodecState(0), "w")


def test_one_bit_quantization_of_a_range_wider_than_float32():
    x = torch.tensor([-2e38, 2e38, 0.0, 1.0, -1e38, 3e38])
    codec = make_codec("quantize(bits=1)")
    y = codec.decode(codec.encode(x, CodecState(0), "w"))
    assert torch.isfinite(y).all()
    assert ((y - x).abs().double() <= (3e38 + 2e38) / 2 * (1 + 1e-6)).all()  # the documented bound
    assert y[0] == x[0] and y[5] == x[5]  # the ends are levels


@pytest.mark.parametrize("spec", ["qsgd(bits=8)", "qsgd(bits=4, norm='max')", "quantize(bits=2)", "binquant(bits=3)"])
def test_float16_values_never_decode_to_inf(spec):
    x = torch.full((512,), 65000.0, dtype=torch.float16)
    x[::3] = -65504.0
    codec = make_codec(spec)
    for seed in range(5):
        y = codec.decode(codec.encode(x, CodecState(seed), "w"))
        assert y.dtype == torch.float16 and torch.isfinite(y).all(), spec


def _forged(codec, message, **meta):
    from thinwire.engine import wire
    header, payload = wire.unpack(message)
    payload.meta.update(meta)
    return wire.pack(header["codec_id"], header["digest"], header["dtype"], header["shape"], payload)


def _forged_parts(message, **values):
    """``message`` re-packed (a valid checksum) with ``values[name]`` written over part ``name``
    at the given indices: {name: {index: value}}."""
    from thinwire.engine import wire
    header, payload = wire.unpack(message)
    for name, at in values.items():
        part = payload.parts[name].clone()
        for i, v in at.items():
            part[i] = v
        payload.parts[name] = part
    return wire.pack(header["codec_id"], header["digest"], header["dtype"], header["shape"], payload)


NAN, INF = float("nan"), float("inf")
FORGED_RANGES = [  # colquant's rows (lo, hi): each not a finite interval somewhere
    {"lo": {1: NAN}}, {"hi": {2: NAN}}, {"lo": {0: -INF}}, {"hi": {3: INF}}, {"lo": {1: INF}},
    {"hi": {2: -INF}}, {"lo": {1: INF}, "hi": {1: INF}}, {"lo": {0: -INF}, "hi": {0: -INF}}, {"lo": {3: 5.0}}]
FORGED_NORMS = [{"norms": {1: NAN}}, {"norms": {0: INF}}, {"norms": {2: -1.0}}, {"norms": {3: -0.0}}]


@pytest.mark.parametrize("forced", [False, True], ids=["host", "device path"])
@pytest.mark.parametrize("spec, forged", [("colquant(bits=4)", f) for f in FORGED_RANGES]
                         + [("qsgd(bits=4, bucket=8)", f) for f in FORGED_NORMS])
def test_forged_ranges_and_norms_are_refused_and_sound_ones_kept(spec, forged, forced):
    """A message whose checksum is sound but whose row ranges (hi < lo, NaN, an infinite end)
    or bucket norms (negative, NaN, infinite) are not: a ``CorruptMessageError`` on either
    path; a norm of -0.0 (>= 0) decodes."""
    import contextlib
    from thinwire.engine import CorruptMessageError
    from thinwire.engine.kernels import device
    codec = make_codec(spec)
    w = torch.randn(4, 8, generator=torch.Generator().manual_seed(1))
    message = _forged_parts(codec.encode(w, CodecState(0), "w"), **forged)
    with device.forced() if forced else contextlib.nullcontext():
        if forged == {"norms": {3: -0.0}}:
            assert torch.isfinite(codec.decode(message, CodecState(0), "w", out=torch.empty(4, 8))).all()
            return
        with pytest.raises(CorruptMessageError, match="finite"):
            codec.decode(message, CodecState(0), "w", out=torch.empty(4, 8))


@pytest.mark.parametrize("spec", ["binquant(bits=8, coder='huffman')", "binquant(bits=4, coder='huffman')"])
@pytest.mark.parametrize("sync", [2**31, 2**63, 2**64 + 5, -2**63, 0])
def test_a_forged_huffman_sync_is_a_corrupt_message(spec, sync):
    from thinwire.engine import CorruptMessageError
    codec = make_codec(spec)
    forged = _forged(codec, codec.encode(torch.randn(1000), CodecState(0), "w"), sync=sync)
    with pytest.raises(CorruptMessageError):
        codec.decode(forged, CodecState(0), "w")
    with pytest.raises(CorruptMessageError):
        codec.merge(forged, torch.zeros(1000), CodecState(0), "w")
    with pytest.raises(CorruptMessageError):
        codec.accumulate(forged, torch.zeros(1000), CodecState(0), "w")


@pytest.mark.parametrize("spec", ["topk(ratio=0.01)", "graddrop(ratio=0.99)", "fp32"])
def test_a_header_claiming_another_shape_is_refused_before_allocating(spec):
    import tracemalloc
    from thinwire.engine import wire
    from thinwire.engine import CorruptMessageError
    codec = make_codec(spec)
    message = codec.encode(torch.zeros(100), CodecState(0), "w")
    header, payload = wire.unpack(message)
    payload.parts = {k: v[:0] for k, v in payload.parts.items()}  # an empty payload ...
    forged = wire.pack(header["codec_id"], header["digest"], torch.float64, (2**31 - 1,), payload)  # ... 16 GiB
    tracemalloc.start()
    with pytest.raises(CorruptMessageError, match="claims torch.float64 \\(2147483647,\\)"):
        codec.decode(forged, CodecState(0), "w", like=torch.zeros(100))
    assert tracemalloc.get_traced_memory()[1] < 1 << 20
    tracemalloc.stop()


@pytest.mark.parametrize("spec", ["ef(topk(ratio=0.25))", "ef(quantize(bits=4))", "graddrop(ratio=0.5)"])
@pytest.mark.parametrize("size", [60, 140])
def test_a_tensor_that_changes_size_under_one_key_is_refused_by_name(spec, size):
    codec, state = make_codec(spec), CodecState(0)
    codec.encode(torch.randn(100), state, "w")
    with pytest.raises(ValueError, match=f"tensor 'w' has {size} values, but this sender's codec state"):
        codec.encode(torch.randn(size), state, "w")
    codec.encode(torch.randn(size), state, "w2")  # another key is another state


@pytest.mark.parametrize("size", [60, 140])
def test_the_key_cache_refuses_a_resized_tensor(size):
    from thinwire.policies import Decision
    codec, state = make_codec("keycache"), CodecState(0)
    core = torch.arange(0, 100, 4)
    codec.encode(torch.randn(100), state, "w", Decision(core=core, refresh=True, keys=torch.tensor([1, 2])))
    with pytest.raises(ValueError, match=f"tensor 'w' has {size} values"):
        codec.encode(torch.randn(size), state, "w", Decision(core=core, refresh=False, keys=torch.tensor([1, 2])))


@pytest.mark.parametrize("spec", ["graddrop(ratio=0.5)", "graddrop(ratio=0.9, threshold='exact')",
                                  "graddrop(ratio=0.5, bits=1, ties='keep')", "topk(ratio=0.01)", "qsgd(bits=4)",
                                  "ef(fp16)", "ef(topk(ratio=0.5))", "binquant(bits=4, coder='ans')",
                                  "chain(topk(ratio=0.5), fp16)", "sized(binquant(bits=4), min_numel=100)",
                                  "sized(binquant(bits=4), min_numel=1000)"])  # inner; otherwise (fp32)
@pytest.mark.parametrize("first", [False, True])
def test_a_refused_encode_leaves_the_state_as_it_was(spec, first):
    """Also for the first message of a key (no residual yet: none is left behind)."""
    codec, state = make_codec(spec), CodecState(3)
    x = torch.randn(256)
    if not first:
        codec.encode(x, state, "w")
    before = state.state_dict()
    bad = x.clone()
    bad[17] = float("nan")
    with pytest.raises(ValueError, match="contains NaN or Inf"):
        codec.encode(bad, state, "w")
    after = state.state_dict()
    assert torch.equal(before["generator"], after["generator"])
    assert before["slots"].keys() == after["slots"].keys()
    for key, slot in before["slots"].items():
        assert all(torch.equal(t, after["slots"][key][n]) for n, t in slot.items()), key


def test_fp32_and_fp16_still_carry_nan_and_inf_bit_for_bit():
    x = torch.tensor([float("nan"), float("inf"), -float("inf"), 1.5])
    for spec in ("fp32", "fp16"):
        codec = make_codec(spec)
        y = codec.decode(codec.encode(x))
        assert torch.isnan(y[0]) and y[1] == float("inf") and y[2] == -float("inf") and y[3] == 1.5


@pytest.mark.parametrize("bits", [1, 2, 4, 8, 12, 16])
@pytest.mark.parametrize("lo, hi", [(0.0, 1e-40), (1e-42, 5e-39), (-3e-39, 3e-39), (-1e-45, 1e-44)])
def test_subnormal_ranges_keep_the_quantization_bound(bits, lo, hi):
    x = torch.linspace(lo, hi, 1000, dtype=torch.float64).to(torch.float32)
    codec = make_codec(f"quantize(bits={bits})")
    y = codec.decode(codec.encode(x, CodecState(0), "w"))
    width = float(x.max()) - float(x.min())
    bound = width / (2 * ((1 << bits) - 1)) * (1 + 1e-6) + 2.0**-150  # and half a float32 ulp of rounding
    assert (y.double() - x.double()).abs().max().item() <= bound


@pytest.mark.parametrize("spec", ["ef(topk(ratio=0.5))", "chain(topk(ratio=0.5), fp16)", "ef(fp32)"])
def test_finite_values_whose_sum_overflows_encode_and_inf_beside_them_does_not(spec):
    """The codec's own finiteness check reads one sum; an infinite sum of finite values
    takes the full test and passes, an Inf among them is refused."""
    codec = make_codec(spec)
    big = torch.tensor([3e38, 3e38, 1.0, -2.0])
    assert not torch.isfinite(big.sum())
    codec.encode(big, CodecState(0), "w")
    with pytest.raises(ValueError, match="contains NaN or Inf"):
        codec.encode(torch.tensor([3e38, float("inf"), 1.0, -2.0]), CodecState(0), "w")


@pytest.mark.parametrize("forced", [False, True], ids=["host", "device path"])
@pytest.mark.parametrize("n", [1000, 2_100_000], ids=["in place", "streamed"])  # 8.4 MB: the scatter streams
@pytest.mark.parametrize("where", ["first after last", "a repeat", "below zero", "past the end"])
def test_top_k_indices_out_of_order_or_range_are_a_corrupt_message(where, n, forced):
    """A top-k message whose checksum is sound but whose indices do not ascend strictly
    within the tensor: refused by decode, merge and accumulate, on either path, before
    anything is written (on the host an index out of order would scatter outside its chunk)."""
    import contextlib
    from thinwire.engine import CorruptMessageError
    from thinwire.engine.kernels import device
    codec = make_codec("topk(ratio=0.01)")
    message = codec.encode(torch.randn(n, generator=torch.Generator().manual_seed(2)), CodecState(0), "w")
    from thinwire.engine import wire
    index = wire.unpack(message)[1].parts["index"]
    value = {"first after last": int(index[-1]), "a repeat": int(index[1]), "below zero": -1,
             "past the end": n}[where]
    forged = _forged_parts(message, index={0: value} if where != "past the end" else {-1: value})
    out = torch.full((n,), 7.0)
    with device.forced() if forced else contextlib.nullcontext():
        with pytest.raises(CorruptMessageError, match="not strictly ascending"):
            codec.decode(forged, CodecState(0), "w", out=out)
        with pytest.raises(CorruptMessageError):
            codec.merge(forged, out, CodecState(0), "w")
        with pytest.raises(CorruptMessageError):
            codec.accumulate(forged, out, CodecState(0), "w")
    assert (out == 7.0).all()


ANS_N = 3 * 65_536 + 100  # four rANS streams: a message with stream offsets


@pytest.mark.parametrize("forged", [{"sync": 0}, {"sync": 2**31}, {"sync": 2**63}, {"sync": -5}, {"sync": 65_535},
                                    {"sync": 2 * 65_536}])
def test_a_forged_ans_stream_length_is_a_corrupt_message(forged):
    from thinwire.engine import CorruptMessageError
    codec = make_codec("binquant(bits=5, coder='ans')")
    message = _forged(codec, codec.encode(torch.randn(ANS_N), CodecState(0), "w"), **forged)
    with pytest.raises(CorruptMessageError, match="ans"):
        codec.decode(message, CodecState(0), "w")


@pytest.mark.parametrize("forged", [{"words": {0: 7}}, {"words": {40: 12345}}, {"words": {-1: 0}},
                                    {"syncs": {0: 1}}, {"syncs": {1: 3}}, {"syncs": {2: 2**32 - 1}},
                                    {"counts": {3: 0}}])
def test_forged_ans_streams_are_a_corrupt_message(forged):
    """A sound checksum over streams that do not decode to their ends (a changed word, stream
    offsets out of order or past the words), or over another histogram."""
    from thinwire.engine import CorruptMessageError
    codec = make_codec("binquant(bits=5, coder='ans')")
    x = torch.randn(ANS_N, generator=torch.Generator().manual_seed(3))
    sound = codec.encode(x, CodecState(0), "w")
    from thinwire.engine import wire
    assert wire.unpack(sound)[1].parts["syncs"].numel() == 3
    assert torch.equal(codec.decode(sound, CodecState(0), "w"), make_codec("binquant(bits=5)").decode(
        make_codec("binquant(bits=5)").encode(x, CodecState(0), "w"), CodecState(0), "w"))
    with pytest.raises(CorruptMessageError, match="ans"):
        codec.decode(_forged_parts(sound, **forged), CodecState(0), "w")


@pytest.mark.parametrize("per", ["row", "column"])
@pytest.mark.parametrize("shape", [(0, 5), (5, 0), (0, 0)])
@pytest.mark.parametrize("coder", ["raw", "huffman"])
def test_per_row_and_column_ranges_of_an_empty_matrix(per, shape, coder):
    """No rows or no columns: no range to send, and the message decodes to the empty matrix
    (it raised IndexError, or wrote a message its own decoder called corrupt)."""
    codec = make_codec(f"binquant(bits=4, per={per!r}, coder={coder!r})")
    decoded = codec.decode(codec.encode(torch.empty(shape), CodecState(0), "w"), CodecState(0), "w")
    assert decoded.shape == shape


def test_a_message_without_the_ranges_per_row_is_refused():
    from thinwire.codecs import CorruptMessageError
    per_tensor = make_codec("binquant(bits=4)").encode(torch.randn(3, 4), CodecState(0), "w")
    from thinwire.engine import wire
    header, payload = wire.unpack(per_tensor)
    row = make_codec("binquant(bits=4, per='row')")
    forged = wire.pack(row.codec_id, row.digest, header["dtype"], header["shape"], payload)
    with pytest.raises(CorruptMessageError, match=r"a message without per-row ranges for a tensor of shape \(3, 4\)"):
        row.decode(forged, CodecState(0), "w")


@pytest.mark.parametrize("spec", ["binquant(bits=4)", "binquant(bits=4, coder='huffman')",
                                  "binquant(bits=2, per='row')", "binquant(bits=8)", "quantize(bits=4)"])
def test_a_range_narrower_than_float32s_normal_numbers_keeps_its_bins(spec):
    """[-1.4e-45, 1.4e-45] (float32's smallest subnormals): the bins' centres, not all lo."""
    x = torch.tensor([-1.4e-45, 0.0, 1.4e-45, 1.4e-45])
    codec = make_codec(spec)
    decoded = codec.decode(codec.encode(x.reshape(2, 2), CodecState(0), "w"), CodecState(0), "w").reshape(-1)
    assert decoded[0] < 0 < decoded[2] and decoded[2] == decoded[3] and decoded[1].abs() <= 1.4e-45


def test_a_large_message_over_a_subnormal_range_keeps_its_bins():
    """The large host message read as it is checked (``_read_on_host``) gives the float64 centres too."""
    x = torch.tensor([-1.4e-45, 0.0, 1.4e-45]).repeat(1 << 19)
    codec = make_codec("binquant(bits=8)")
    message = codec.encode(x, CodecState(0), "w")
    out = torch.empty_like(x)
    assert codec.decode(message, CodecState(0), "w", out=out) is out
    assert torch.equal(out.view(torch.int32), codec.decode(message, CodecState(0), "w").view(torch.int32))
    assert out[0] < 0 < out[2] and out[1].abs() <= 1.4e-45
    damaged = bytearray(message)
    damaged[len(damaged) // 2] ^= 1
    with pytest.raises(CorruptMessageError):
        codec.decode(bytes(damaged), CodecState(0), "w", out=out)


def test_per_row_quantization_names_the_tensor_it_refuses():
    x = torch.randn(4, 3)
    x[1, 1] = float("nan")
    for decision in (None, "policy"):
        codec = make_codec("colquant(bits=4)" if decision is None else "colquant(bits=0)")
        from thinwire.policies import Decision
        with pytest.raises(ValueError, match=r"the tensor 'layer.weight' contains NaN or Inf"):
            codec.encode(x, CodecState(0), "layer.weight", None if decision is None else Decision(bits=4))


@pytest.mark.parametrize("x", NOT_FLOAT[1:4], ids=lambda x: str(x.dtype))
def test_slim_dps_policy_refuses_what_its_codec_refuses_before_it_draws(x):
    """core_explorer reads the tensor before keycache does: a bool, uint16 or uint32 tensor is
    refused by name (it raised NotImplementedError from abs), and a NaN before the explorer is
    drawn (the generator and the cached core stay as they were)."""
    from thinwire.policies import make_policy
    policy = make_policy("core_explorer(alpha=0.3, epsilon=0.15, refresh=10)")
    with pytest.raises(ValueError, match=rf"tensor 'w' has dtype {x.dtype}: codecs send floating-point"):
        policy.decide(0, "w", x)
    policy.decide(0, "w", torch.randn(100))
    generator, memory = policy.generator.get_state().clone(), dict(policy.memory)
    bad = torch.randn(100)
    bad[7] = float("nan")
    with pytest.raises(ValueError, match=r"tensor 'w' contains NaN or Inf"):
        policy.decide(1, "w", bad)
    assert torch.equal(policy.generator.get_state(), generator) and policy.memory.keys() == memory.keys()
