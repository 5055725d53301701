"""The device path (torch operations on the tensor's own device, what a GPU tensor takes)
against the host kernels, on CPU tensors: the same messages byte for byte, the same decoded
values (``engine/kernels/device.py``)."""

import contextlib

import numpy as np
import pytest
import torch

from thinwire.codecs import CodecState, make_codec

from thinwire.engine import wire
from thinwire.engine.kernels import device
from thinwire.engine.kernels.extrema import extrema
from thinwire.codecs.sparsify import draws_ahead

from widths import EVERYDAY, every_width


def _tensors():
    g = torch.Generator().manual_seed(3)
    yield "normal", torch.randn(70_001, generator=g)
    yield "far from zero", torch.randn(5_000, generator=g) * 1e-3 + 40.0  # the unfused multiply-add
    yield "tiny", torch.randn(999, generator=g) * 1e-30
    yield "constant", torch.full((17,), 2.5)
    yield "one", torch.tensor([-3.0])
    signed_zeros = torch.randn(4_000, generator=g).abs()
    signed_zeros[::7] = -0.0
    yield "signed zeros", signed_zeros


@pytest.mark.parametrize("bits", every_width())
def test_quantize_sends_the_same_bytes_and_decodes_the_same_values_on_either_path(bits):
    codec = make_codec(f"quantize(bits={bits})")
    for name, x in _tensors():
        host = codec.encode(x, CodecState(0), "w")
        with device.forced():
            moved = codec.encode(x, CodecState(0), "w")
        assert bytes(moved) == bytes(host), name
        expected = codec.decode(host, CodecState(0), "w")
        out = torch.empty_like(x)
        with device.forced():
            got = codec.decode(host, CodecState(0), "w", out=out)
        assert got is out and torch.equal(out.view(torch.int32), expected.view(torch.int32)), name


def test_extrema_are_the_same_bit_patterns_on_either_path():
    cases = [torch.tensor([1.0, -0.0, 2.0]), torch.tensor([0.0, -0.0]), torch.tensor([-1.0, -5.0]),
             torch.tensor([3.0, 0.5]), torch.tensor([-0.0]), torch.tensor([1.0, float("inf"), -2.0]),
             torch.tensor([1.0, float("nan"), -2.0]), torch.tensor([-float("inf"), 4.0]),
             torch.randn(200_000, generator=torch.Generator().manual_seed(0)),
             torch.tensor([1e-45, -1e-45, 3e-39]), torch.tensor([0.0, 5.0, 2.0]), torch.tensor([-3.0, -0.0]),
             torch.tensor([2.0, 7.0]), torch.tensor([-2.0, -7.0]), torch.tensor([3.4e38, -3.4e38]),
             torch.tensor([0x7FC00123, 0x3F800000], dtype=torch.int64).to(torch.int32).view(torch.float32),  # NaN payloads
             torch.tensor([0xFFC00456, 0xBF800000], dtype=torch.int64).to(torch.int32).view(torch.float32)]
    for x in cases:
        host = extrema(x)
        with device.forced():
            moved = extrema(x)
        assert np.array(host, np.float32).view(np.int32).tolist() == \
            np.array(moved, np.float32).view(np.int32).tolist(), x[:4]


def test_the_path_follows_the_device_and_forcing_ends_with_its_block():
    x = torch.zeros(3)
    assert not device.on_device(x)
    with device.forced():
        assert device.on_device(x)
        with pytest.raises(RuntimeError):
            with device.forced():
                raise RuntimeError("inside")
        assert device.on_device(x)  # the inner block restored the outer one's setting
    assert not device.on_device(x)
    assert device.on_device(torch.zeros(3, device="meta"))



def _tied_tensors():
    g = torch.Generator().manual_seed(4)
    yield "small integers", torch.randint(-3, 4, (300_000,), generator=g).float()  # ties at the k-th
    yield "zeros", torch.zeros(5_000)
    yield "few non-zeros", torch.zeros(200_000).index_fill_(0, torch.arange(0, 200_000, 997), -1.5)
    yield "descending", torch.arange(150_000.0).flip(0)
    yield "large", torch.randn(3_000_000, generator=g)
    crowded = torch.randn(1_000_003, generator=g)
    crowded[70_000:150_000] += 1e3  # one chunk holds more candidates than its slots: the second read
    yield "a crowded chunk", crowded


@pytest.mark.parametrize("ratio", [1e-5, 0.01, 0.3, 0.5, 1.0])
def test_top_k_selects_the_largest_magnitudes_ties_lowest_index_first_on_either_path(ratio):
    """The selection (no sort) against a stable sort by magnitude, and the device path's
    message against the host's, byte for byte."""
    codec = make_codec(f"topk(ratio={ratio})")
    for name, x in [*_tensors(), *_tied_tensors()]:
        k = codec.k_for(x.numel())
        expected = torch.sort(-x.abs(), stable=True).indices[:k].sort().values
        host = codec.encode(x, CodecState(0), "w")
        index, values = codec.sparse_entries(wire.unpack(host)[1], x.numel(), CodecState(0), "w")
        assert torch.equal(index, expected) and torch.equal(values, x[expected]), name
        with device.forced():
            moved = codec.encode(x, CodecState(0), "w")
        assert bytes(moved) == bytes(host), name


def test_top_k_refuses_nan_and_inf_anywhere_on_either_path():
    codec = make_codec("topk(ratio=0.01)")
    for bad in (float("nan"), float("inf"), -float("inf")):
        x = torch.randn(200_000, generator=torch.Generator().manual_seed(5))
        x[123_457] = bad  # the count pass reads every entry, whatever the threshold
        for forced in (False, True):
            with device.forced() if forced else contextlib.nullcontext():
                with pytest.raises(ValueError, match="contains NaN or Inf"):
                    codec.encode(x, CodecState(0), "w")


GRADDROP = ["graddrop(ratio=0.99)", "graddrop(ratio=0.9, sampling='stride', encoding='index_value')",
            "graddrop(ratio=0.99, bits=1)", "graddrop(ratio=0.95, bits=2, levels='column')",
            "graddrop(ratio=0.99, bits=2, levels='global', ties='keep')", "graddrop(ratio=0.9, threshold='exact')",
            "graddrop(ratio=0.99, scope='local', residual=False)", "graddrop(ratio=0.0)",
            "graddrop(ratio=0.95, bits=2, levels='threshold', scope='local')",
            "graddrop(ratio=0.99, bits=1, levels='threshold')", "graddrop(ratio=0.99, bits=2, encoding='index_value')",
            "graddrop(ratio=0.99, bits=1, levels='global')", "graddrop(ratio=0.95, bits=1, levels='column')"]


@pytest.mark.parametrize("spec", GRADDROP)
def test_gradient_dropping_sends_the_same_bytes_and_keeps_the_same_residual_on_either_path(spec):
    """Five messages of a matrix (residual carried between them) on each path: the same
    messages, residuals and decoded values."""
    codec = make_codec(spec)
    g = torch.Generator().manual_seed(6)
    grads = [torch.randn(300, 700, generator=g) for _ in range(5)]
    grads[2][:, :5] = 0.0  # ties at zero
    states = []
    for forced in (False, True):
        state, messages = CodecState(1), []
        with device.forced() if forced else contextlib.nullcontext():
            for x in grads:
                messages.append(bytes(codec.encode(x, state, "w")))
            decoded = [codec.decode(bytearray(m), CodecState(0), "w") for m in messages]
        states.append((messages, state.state_dict(), decoded))
    (host, host_state, host_decoded), (moved, moved_state, moved_decoded) = states
    assert moved == host
    assert all(torch.equal(a, b) for a, b in zip(host_decoded, moved_decoded))
    for name, t in host_state["slots"]["w"].items():
        assert torch.equal(moved_state["slots"]["w"][name], t), name
    assert torch.equal(moved_state["generator"], host_state["generator"])


def _graddrop_messages(spec, sends, forced, meddle=None):
    """The messages of ``sends`` ((key, tensor) in order) from one state, and the state;
    ``meddle(state, i)`` runs before send i."""
    codec, state, messages = make_codec(spec), CodecState(1), []
    with device.forced() if forced else contextlib.nullcontext():
        for i, (key, x) in enumerate(sends):
            if meddle is not None:
                meddle(state, i)
            messages.append(bytes(codec.encode(x, state, key)))
    return messages, state


@pytest.mark.parametrize("spec", ["graddrop(ratio=0.99)", "graddrop(ratio=0.95, bits=1, scope='local')"])
def test_gradient_dropping_draws_the_next_sample_ahead_and_uses_it_only_where_it_is_the_same_draw(spec):
    """On the device path the next message's sample is drawn ahead (``draws_ahead``), on its
    own thread, the next draws predicted from the order seen. One tensor: every
    message after the first uses them. Tensors of other sizes in turn: once the order has
    been seen (by the fourth message of two in turn, the fifth of three). Another draw from
    the generator in between: none fits. Every message equals the host path's, the generator
    left where the host path leaves it."""
    g = torch.Generator().manual_seed(8)
    big, small, third = ([torch.randn(shape, generator=g) for _ in range(4)]
                         for shape in [(200, 600), (90, 300), (40, 50)])
    other = lambda state, i: torch.randint(0, 9, (i + 1,), generator=state.generator)  # noqa: E731
    in_turn = lambda *tensors: [(key, x) for row in zip(*tensors) for key, x in zip("wvu", row)]  # noqa: E731
    cases = {"one tensor": ([("w", x) for x in big], None, 3),
             "two tensors in turn": (in_turn(big, small), None, 5),
             "three tensors in turn": (in_turn(big, small, third), None, 8),
             "two of one size in turn": (in_turn(big, big[::-1]), None, 7),
             "another draw in between": ([("w", x) for x in big], other, 0)}
    for name, (sends, meddle, taken) in cases.items():
        host, host_state = _graddrop_messages(spec, sends, False, meddle)
        moved, moved_state = _graddrop_messages(spec, sends, True, meddle)
        assert moved == host, name
        assert torch.equal(moved_state.generator.get_state(), host_state.generator.get_state()), name
        assert moved_state.scratch["graddrop.draws_ahead"].taken == taken, name
        assert "graddrop.draws_ahead" not in host_state.scratch, name


def _draw_in_a_forked_child(queue) -> None:
    try:
        queue.put(draws_ahead._submit(lambda: "drawn").result(timeout=20))
    except Exception as error:  # the parent's drawing thread is not in the child: nothing runs the work
        queue.put(repr(error))


def test_a_forked_child_draws_on_a_thread_of_its_own():
    """After a fork the parent's drawing thread does not exist in the child: the child makes
    its own, where it would otherwise wait forever for work queued to the dead one."""
    import multiprocessing
    assert draws_ahead._submit(lambda: "drawn").result() == "drawn"  # the parent's thread is running
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_draw_in_a_forked_child, args=(queue,))
    child.start()
    got = queue.get(timeout=60)
    child.join(60)
    assert got == "drawn"


def test_the_key_cache_sends_the_same_bytes_on_either_path():
    """The key cache is torch operations only (no host kernel): a guard that it stays so."""
    from types import SimpleNamespace
    codec = make_codec("keycache")
    x = torch.randn(10_000, generator=torch.Generator().manual_seed(8))
    decisions = [SimpleNamespace(send=True, bits=None, levels=None, core=torch.arange(0, 10_000, 37),
                                 keys=torch.tensor([5, 6, 7000]), refresh=refresh, entropy=None)
                 for refresh in (True, False, False)]
    sent = []
    for forced in (False, True):
        state = CodecState(0)
        with device.forced() if forced else contextlib.nullcontext():
            sent.append([bytes(codec.encode(x * (i + 1), state, "w", d)) for i, d in enumerate(decisions)])
    assert sent[0] == sent[1]


@pytest.mark.parametrize("spec", ["qsgd(bits=8, bucket=512)", "qsgd(bits=2, bucket=7)", "qsgd(bits=4, bucket=512, norm='max')",
                                  "qsgd(bits=16, bucket=1)", "qsgd(bits=9, bucket=100)", "qsgd(bits=3, bucket=64, norm='max')",
                                  "qsgd(bits=8, bucket=512, coding='elias')"])
def test_qsgd_sends_the_same_bytes_and_decodes_the_same_values_on_either_path(spec):
    codec = make_codec(spec)
    for name, x in _tensors():
        host_state, moved_state = CodecState(5), CodecState(5)
        for _ in range(2):  # two messages: the second key comes from the generator after the first
            host = codec.encode(x, host_state, "g")
            with device.forced():
                moved = codec.encode(x, moved_state, "g")
            assert bytes(moved) == bytes(host), name
        expected = codec.decode(host, CodecState(0), "g")
        out = torch.empty_like(x)
        with device.forced():
            codec.decode(host, CodecState(0), "g", out=out)
        assert torch.equal(out.view(torch.int32), expected.view(torch.int32)), name


def test_qsgd_refuses_non_finite_values_and_overflowing_norms_on_the_device_path_too():
    codec = make_codec("qsgd(bits=8, bucket=4)")
    for bad, match in ((torch.tensor([1.0, float("nan"), 2.0]), "NaN or Inf"), (torch.full((4,), 3e38), "overflows")):
        state = CodecState(1)
        before = state.generator.get_state()
        with device.forced(), pytest.raises(ValueError, match=match):
            codec.encode(bad, state, "g")
        assert torch.equal(state.generator.get_state(), before)  # a refused message draws nothing


DEVICE_DECODERS = ["fp32", "fp16", "bf16", "quantize(bits=3)", "qsgd(bits=4, bucket=64)", "topk(ratio=0.05)",
                   "graddrop(ratio=0.9)", "graddrop(ratio=0.9, bits=2)", "ef(topk(ratio=0.05))",
                   "sized(quantize(bits=8), min_numel=100)", "colquant(bits=3)", "binquant(bits=5)",
                   "binquant(bits=12)"]


@pytest.mark.parametrize("spec", DEVICE_DECODERS)
def test_codecs_that_decode_on_the_device_write_out_the_host_values_on_the_device_path(spec):
    """A codec that ``decodes_on_device`` is handed a GPU ``out`` itself; on CPU tensors the
    forced device path stands in for it and must write the values the host path returns."""
    codec = make_codec(spec)
    assert codec.decodes_on_device
    x = torch.randn(3_001, generator=torch.Generator().manual_seed(5))
    message = codec.encode(x, CodecState(1), "w")
    expected = codec.decode(message, CodecState(0), "w")
    out = torch.full_like(x, float("nan"))
    with device.forced():
        got = codec.decode(message, CodecState(0), "w", out=out)
    assert got is out and torch.equal(out, expected)


def test_codecs_without_a_device_decoder_say_so():
    """Their decompress reads host buffers: a GPU ``out`` gets the host-decoded values."""
    for spec in ("binquant(bits=5, coder='huffman')", "binquant(bits=5, per='column')",
                 "chain(topk(ratio=0.1), quantize(bits=8))",
                 """sized(quantize(bits=8), min_numel=100, otherwise="binquant(bits=5, coder='ans')")"""):
        assert not make_codec(spec).decodes_on_device, spec


def _same_on_either_path(codec, x, decision=None, key="w"):
    """The message of ``x`` on both paths (equal bytes), and both decodes into ``out``."""
    host = codec.encode(x, CodecState(0), key, decision)
    with device.forced():
        moved = codec.encode(x, CodecState(0), key, decision)
    assert bytes(moved) == bytes(host)
    expected = codec.decode(host, CodecState(0), key)
    out = torch.full_like(x, float("nan"))
    with device.forced():
        got = codec.decode(host, CodecState(0), key, out=out)
    assert got is out and torch.equal(out.view(torch.int32), expected.view(torch.int32))


def _same_for_each(codec, tensors):
    for name, x in tensors:
        try:
            _same_on_either_path(codec, x)
        except AssertionError as error:
            raise AssertionError(name) from error


def _matrices():
    g = torch.Generator().manual_seed(11)
    yield "normal", torch.randn(37, 101, generator=g)
    yield "far from zero", torch.randn(9, 500, generator=g) * 1e-3 + 40.0
    yield "all negative", -torch.rand(5, 64, generator=g) - 1.0
    constant = torch.randn(6, 33, generator=g)
    constant[2] = 0.75
    yield "a constant row", constant
    yield "one row", torch.randn(1, 999, generator=g)
    yield "1-D", torch.randn(4_001, generator=g)
    zeros = torch.rand(4, 40, generator=g)
    zeros[:, ::3], zeros[:, 1::3] = 0.0, -0.0  # both zeros at each row's least ...
    zeros[1] *= -1.0  # ... or greatest
    zeros[2] *= 0.0
    yield "signed zeros", zeros


def test_column_quantization_sends_a_zero_end_of_a_range_as_plus_zero_on_either_path():
    """Which zero a row's min or max is depends on the reduction's order: the message's lo
    and hi carry +0 for either, on either path."""
    m = torch.tensor([[0.0, -0.0, 1.0, 2.0], [-0.0, 0.0, -1.0, -3.0], [-0.0, 0.0, -0.0, 0.0], [-0.0, -0.0, 5.0, 5.0]])
    for forced in (False, True):
        with device.forced() if forced else contextlib.nullcontext():
            parts = make_codec("colquant(bits=8)").compress(m.reshape(-1), CodecState(0), "w", shape=(4, 4)).parts
        assert parts["lo"].tolist() == [0.0, -3.0, 0.0, 0.0] and parts["hi"].tolist() == [2.0, 0.0, 0.0, 5.0]
        assert torch.signbit(parts["lo"]).tolist() == [False, True, False, False], forced
        assert not torch.signbit(parts["hi"]).any(), forced


@pytest.mark.parametrize("bits", EVERYDAY)
@pytest.mark.parametrize("options", ["", ", eps=0.0", ", max_floor=True"])
def test_column_quantization_sends_the_same_bytes_and_decodes_the_same_values_on_either_path(bits, options):
    """MQGrad's per-row bins (``kernels/torch_bins.py`` against ``kernels/rows.py``)."""
    codec = make_codec(f"colquant(bits={bits}{options})")
    _same_for_each(codec, _matrices())


@pytest.mark.parametrize("coder", ["raw", "huffman", "ans"])
@pytest.mark.parametrize("bits", [1, 3, 8, 12, 16])
def test_bin_quantization_sends_the_same_bytes_and_decodes_the_same_values_on_either_path(coder, bits):
    """Oland & Raj's bins (``kernels/torch_bins.py`` against ``bin_quantize``'s kernels):
    codes on the device, the raw coder packing there, the entropy coders on the host."""
    codec = make_codec(f"binquant(bits={bits}, coder={coder!r})")
    _same_for_each(codec, _tensors())


def test_bin_quantization_with_fractional_levels_and_column_ranges_is_the_same_on_either_path():
    from thinwire.codecs.base import plain_decision
    x = torch.randn(70_001, generator=torch.Generator().manual_seed(4))
    for levels in (5, 7, 8):
        _same_on_either_path(make_codec("binquant(bits=0, coder='huffman')"), x, plain_decision(bits=3, levels=levels))
    m = torch.randn(40, 70, generator=torch.Generator().manual_seed(6))
    for per in ("column", "row"):
        _same_on_either_path(make_codec(f"binquant(bits=4, coder='huffman', per={per!r})"), m)


@pytest.mark.parametrize("spec", ["graddrop(ratio=0.5)", "graddrop(ratio=0.5, threshold='exact')",
                                  "graddrop(ratio=0.99, encoding='index_value')"])
def test_graddrop_refuses_inf_even_when_the_threshold_itself_is_inf_on_either_path(spec):
    """Mostly Inf: the threshold is Inf, nothing passes the strict test, and the values at the
    threshold (Inf) would be sent as a stalled span's; both paths refuse the tensor instead."""
    x = torch.full((10_000,), float("inf"))
    x[:10] = 1.0
    for forced in (False, True):
        with device.forced() if forced else contextlib.nullcontext(), pytest.raises(ValueError, match="NaN or Inf"):
            make_codec(spec).encode(x, CodecState(0), "g")


def test_the_kth_smallest_by_topk_is_kthvalue_s_value_ties_included():
    """A GPU selects the k-th largest top-k candidate and the dropping threshold by
    ``torch.topk`` (``torch_select.kth_smallest`` on the device path); on the CPU
    ``kthvalue``: the same value, ties and all."""
    from thinwire.engine.kernels.torch_select import kth_smallest
    g = torch.Generator().manual_seed(4)
    for values in (torch.randn(10_001, generator=g).abs(), torch.randint(0, 9, (5_000,), generator=g).float(),
                   torch.tensor([3.0]), torch.zeros(7)):
        n = values.numel()
        for j in sorted(j for j in {1, 2, n // 3, n // 2, n // 2 + 1, n - n // 3, n - 1, n} if 1 <= j <= n):
            want = torch.kthvalue(values, j).values
            assert kth_smallest(values, j).item() == want.item(), (n, j)
            with device.forced():
                got = kth_smallest(values, j)
                assert got.shape == () and got.item() == want.item(), (n, j)
