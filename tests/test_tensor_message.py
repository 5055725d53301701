"""Messages written into uint8 tensors (``wire/tensor_message.py``): the host message's
bytes, on either kernel path, decoded to the same values, sized within a reused tensor,
and refused when damaged. On CPU tensors here; a GPU tensor takes the same code, with the
CRC computed by ``kernels/triton_crc.py`` (tested under Triton's interpreter there)."""

import contextlib

import pytest
import torch

from thinwire.codecs import CodecState, CorruptMessageError, make_codec

from thinwire.engine import wire
from thinwire.codecs.base import plain_decision
from thinwire.engine.kernels import device
from thinwire.engine.wire import tensor_message

SPECS = ["fp32", "fp16", "bf16", *[f"quantize(bits={b})" for b in (1, 2, 3, 4, 8, 12, 16)],
         "qsgd(bits=8, bucket=512)", "qsgd(bits=3, bucket=64, norm='max')", "qsgd(bits=8, bucket=512, coding='elias')",
         "topk(ratio=0.01)", "topk(ratio=0.3)", "ef(topk(ratio=0.05))",
         "graddrop(ratio=0.99)", "graddrop(ratio=0.9, sampling='stride', encoding='index_value')",
         "graddrop(ratio=0.99, bits=1)", "graddrop(ratio=0.95, bits=2, levels='column')",
         "graddrop(ratio=0.99, bits=2, levels='global', ties='keep')", "graddrop(ratio=0.9, threshold='exact')",
         "colquant(bits=4)", "binquant(bits=8)", "binquant(bits=5, coder='huffman')",
         "sized(quantize(bits=8), min_numel=100)"]


def _paths():
    yield "host kernels", contextlib.nullcontext
    yield "device path", device.forced


@pytest.mark.parametrize("spec", SPECS)
def test_a_tensor_message_holds_the_host_message_bytes_and_decodes_to_the_same_values(spec):
    codec = make_codec(spec)
    g = torch.Generator().manual_seed(11)
    grads = [torch.randn(120, 250, generator=g) for _ in range(3)]
    for path, context in _paths():
        host_state, tensor_state, out = CodecState(2), CodecState(2), torch.empty(0, dtype=torch.uint8)
        with context():
            for x in grads:  # three steps: residuals, keys and the generator carried in both
                host = codec.encode(x, host_state, "w")
                out = codec.encode(x, tensor_state, "w", out=out)
                assert out.dtype == torch.uint8 and bytes(out.numpy()) == bytes(host), (spec, path)
                assert wire.measure(out) == wire.measure(host)
                expected = codec.decode(host, CodecState(0), "w")
                assert torch.equal(codec.decode(out, CodecState(0), "w"), expected), (spec, path)
                into = torch.full_like(x, float("nan"))
                assert codec.decode(out, CodecState(0), "w", out=into, like=into) is into
                assert torch.equal(into, expected), (spec, path)


def test_the_key_cache_writes_the_same_tensor_message():
    codec = make_codec("keycache")
    x = torch.randn(10_000, generator=torch.Generator().manual_seed(8))
    decision = plain_decision(core=torch.arange(0, 10_000, 37), keys=torch.tensor([5, 6, 7000]), refresh=True)
    host = codec.encode(x, CodecState(0), "w", decision)
    with device.forced():
        moved = codec.encode(x, CodecState(0), "w", decision, out=torch.empty(0, dtype=torch.uint8))
    assert bytes(moved.numpy()) == bytes(host)


def test_a_reused_tensor_keeps_its_storage_while_the_message_fits_and_a_view_is_never_written_past():
    codec = make_codec("fp32")
    big, small = torch.randn(5_000), torch.randn(100)
    first = codec.encode(big, out=torch.empty(0, dtype=torch.uint8))
    storage = first.untyped_storage().data_ptr()
    second = codec.encode(small, out=first)
    assert second is first and second.numel() == len(codec.encode(small))
    third = codec.encode(big, out=second)  # grows back within the same storage
    assert third.untyped_storage().data_ptr() == storage and torch.equal(codec.decode(third), big)
    frame = torch.zeros(100_000, dtype=torch.uint8)
    view = frame[1_000:1_010]
    written = codec.encode(big, out=view)
    assert written.untyped_storage().data_ptr() != frame.untyped_storage().data_ptr()
    assert not frame.any()  # the frame the view belongs to is untouched


def test_every_damaged_byte_and_any_truncation_is_refused():
    codec = make_codec("quantize(bits=4)")
    message = codec.encode(torch.randn(300), out=torch.empty(0, dtype=torch.uint8))
    for at in range(0, message.numel(), 7):
        bad = message.clone()
        bad[at] ^= 0x10
        with pytest.raises(CorruptMessageError):
            codec.decode(bad)
    for cut in (1, 5, message.numel() - 3):
        with pytest.raises(CorruptMessageError):
            codec.decode(message[:-cut].clone())
    with pytest.raises(CorruptMessageError, match="minimal frame"):
        wire.unpack(torch.zeros(5, dtype=torch.uint8))


def test_a_header_longer_than_the_first_copy_is_read_whole():
    codec = make_codec("qsgd(bits=4, bucket=16)")
    x = torch.randn(2, 3, 2, 5, 7)
    message = codec.encode(x, CodecState(0), "w", out=torch.empty(0, dtype=torch.uint8))
    host = codec.encode(x, CodecState(0), "w")
    assert tensor_message.measure(message, first=9) == wire.measure(host)  # the header runs past the first copy
    for verify in (True, False):
        header, payload = tensor_message.unpack(message, verify=verify, first=9)
        assert header == wire.unpack(host)[0] and set(payload.parts) == {"codes", "norms"}


def test_a_message_tensor_of_another_dtype_or_shape_is_refused_with_its_name():
    codec = make_codec("fp32")
    with pytest.raises(ValueError, match="out must be a contiguous 1-d uint8 tensor"):
        codec.encode(torch.randn(10), out=torch.empty(0, dtype=torch.int32))
    with pytest.raises(ValueError, match="message must be a contiguous 1-d uint8 tensor"):
        codec.decode(torch.zeros(4, 30, dtype=torch.uint8))
