"""fp32's decode into a large host ``out`` verifies the message as it copies the values out,
fp16's and bf16's as they widen them, and quantize's, binquant's and QSGD's (up to 8 bits)
as they rescale the codes (``wire/checked_copy.py``): the same values as before, and a
damaged message raises with ``out`` set to NaN; small messages are still verified before any
value is read. Their encoders checksum the part as they write it."""

import numpy as np
import pytest
import torch

from thinwire.codecs import CodecState, CorruptMessageError, make_codec
from thinwire.engine.kernels import bitpack, crc, stream
from thinwire.engine.wire import checked_copy, format as wire_format

LARGE = (stream.STREAM_MIN_BYTES // 4) + 1001  # values: streamed, an odd tail
needs_crc = pytest.mark.skipif(not crc.HARDWARE, reason="the streamed copy checksums only with the CRC instruction")


PART_BYTES = {"fp32": lambda n: 4 * n, "fp16": lambda n: 2 * n, "bf16": lambda n: 2 * n,  # the one part's bytes
              "quantize(bits=8)": lambda n: n, "quantize(bits=3)": lambda n: bitpack.packed_bytes(n, 3),
              "binquant(bits=8)": lambda n: n, "binquant(bits=5)": lambda n: bitpack.packed_bytes(n, 5),
              "qsgd(bits=8)": lambda n: n, "qsgd(bits=4)": lambda n: bitpack.packed_bytes(n, 4)}


def _message(n: int, seed: int = 0, spec: str = "fp32"):
    x = torch.randn(n, generator=torch.Generator().manual_seed(seed))
    return x, make_codec(spec).encode(x, CodecState(0), "x")


@needs_crc
@pytest.mark.parametrize("spec", PART_BYTES)
def test_large_decode_reads_the_message_once_and_matches(monkeypatch, spec):
    x, message = _message(LARGE, spec=spec)
    expected = make_codec(spec).decode(bytes(message))  # verified first, then read: no out
    whole = []
    monkeypatch.setattr(wire_format, "checksum", lambda view: whole.append(len(view)) or 0)
    out = torch.empty_like(x)
    assert make_codec(spec).decode(message, CodecState(0), "x", out=out) is out
    assert torch.equal(out, expected) and whole == []  # not checked by unpack: by the copy


@needs_crc
@pytest.mark.parametrize("spec", PART_BYTES)
def test_large_encode_checksums_the_part_as_it_writes_it(monkeypatch, spec):
    """No pass over the written part to checksum it: the kernel that wrote it took its CRC."""
    x, expected = _message(LARGE, spec=spec)
    known, real = [], wire_format.fill_and_checksum
    monkeypatch.setattr(wire_format, "fill_and_checksum", lambda message, total, copies, regions: known.append(
        [nbytes for _, nbytes, _ in regions]) or real(message, total, copies, regions))
    assert bytes(make_codec(spec).encode(x, CodecState(0), "x")) == bytes(expected)
    assert known == [[PART_BYTES[spec](LARGE)]]  # the part's CRC came with it: only the header is read


@needs_crc
@pytest.mark.parametrize("spec", PART_BYTES)
@pytest.mark.parametrize("where", ["first value", "values middle", "last value", "trailer"])
def test_damaged_large_message_raises_and_leaves_nan(where, spec):
    x, message = _message(LARGE, 1, spec)
    first = len(message) - 4 - PART_BYTES[spec](LARGE)
    at = {"first value": first, "values middle": len(message) // 2, "last value": len(message) - 5,
          "trailer": len(message) - 1}[where]
    message[at] ^= 0x10
    out = torch.zeros_like(x)
    with pytest.raises(CorruptMessageError, match="checksum mismatch"):
        make_codec(spec).decode(message, CodecState(0), "x", out=out)
    assert (out.view(torch.int32) == -1).all()  # every byte 0xFF: NaN, no value of the message


@needs_crc
def test_damaged_header_is_a_corrupt_message_not_a_wrong_out():
    """Every bit flip in the header (digest, dtype, shape...) is a ``CorruptMessageError``,
    also where the damaged header no longer fits ``out`` (checked before that is said)."""
    x, message = _message(LARGE, 6)
    first = len(message) - 4 - 4 * LARGE
    for at in range(first):
        for bit in (1, 0x10, 0x80):
            damaged = bytearray(message)
            damaged[at] ^= bit
            out = torch.full_like(x, 7.0)
            with pytest.raises(CorruptMessageError):
                make_codec("fp32").decode(damaged, CodecState(0), "x", out=out)
            assert (out == 7.0).all() or (out.view(torch.int32) == -1).all(), (at, bit)


def test_a_wrong_out_for_a_sound_message_is_a_value_error():
    x, message = _message(LARGE, 8)
    with pytest.raises(ValueError, match="out must be contiguous"):
        make_codec("fp32").decode(message, CodecState(0), "x", out=torch.empty(LARGE + 1))


def test_small_message_is_verified_before_any_value_is_read():
    x, message = _message(1000, 2)
    message[100] ^= 1
    out = torch.full_like(x, 7.0)
    with pytest.raises(CorruptMessageError, match="checksum mismatch"):
        make_codec("fp32").decode(message, CodecState(0), "x", out=out)
    assert (out == 7.0).all()


@needs_crc
def test_without_out_and_as_bytes_the_message_is_verified_first():
    x, message = _message(LARGE, 3)
    assert torch.equal(make_codec("fp32").decode(bytes(message)), x)
    message[40] ^= 1
    with pytest.raises(CorruptMessageError, match="checksum mismatch"):
        make_codec("fp32").decode(message)


@pytest.mark.parametrize("damaged", [False, True])
def test_copy_part_unstreamed_verifies_before_copying(damaged):
    x, message = _message(300, 4)
    if damaged:
        message[50] ^= 4
    _, payload = wire_format.unpack(message, verify=False)
    assert payload.unverified is message
    dst = np.zeros(1200, np.uint8)
    if damaged:
        with pytest.raises(CorruptMessageError):
            checked_copy.copy_part(payload, "values", dst)
        assert (dst == 0xFF).all()
    else:
        checked_copy.copy_part(payload, "values", dst)
        assert np.array_equal(dst.view(np.float32), x.numpy())
    assert payload.unverified is None
    with pytest.raises(ValueError, match="verified already"):
        checked_copy.copy_part(payload, "values", dst)


@needs_crc
def test_decompress_of_an_unverified_payload_without_out_verifies_it():
    x, message = _message(LARGE, 7)
    _, payload = wire_format.unpack(message, verify=False)
    assert torch.equal(make_codec("fp32").decompress(payload, LARGE, CodecState(0), "x"), x)
    assert payload.unverified is None
    message[-9] ^= 1
    _, payload = wire_format.unpack(message, verify=False)
    with pytest.raises(CorruptMessageError):
        make_codec("fp32").decompress(payload, LARGE, CodecState(0), "x")


def test_bad_arguments_are_refused():
    _, message = _message(300, 5)
    _, payload = wire_format.unpack(message, verify=False)
    with pytest.raises(ValueError, match="dst holds 5 bytes"):
        checked_copy.copy_part(payload, "values", np.zeros(5, np.uint8))
    _, tensor_payload = wire_format.unpack(torch.frombuffer(message, dtype=torch.uint8).clone(), verify=False)
    with pytest.raises(ValueError, match="dst is not 1200 uint8"):  # a message tensor's part: dst of its size
        checked_copy.copy_part(tensor_payload, "values", torch.zeros(5, dtype=torch.uint8))
