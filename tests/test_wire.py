"""Wire format v2: compact framing, payload/framing split, total corruption detection."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from test_codecs import SPECS
from thinwire.codecs import CODECS, CodecState, CorruptMessageError, Payload, make_codec
from thinwire.engine import wire


def sample_message(spec: str, n: int = 48) -> bytearray:
    x = torch.randn(n, generator=torch.Generator().manual_seed(7))
    return make_codec(spec).encode(x, CodecState(0), "w")


def test_every_registered_codec_has_its_own_id():
    ids = [cls.codec_id for cls in CODECS.values()]
    assert len(ids) == len(set(ids)) and all(1 <= i <= 255 for i in ids)


@pytest.mark.parametrize("spec", SPECS)
def test_every_flipped_bit_truncation_and_extension_is_detected(spec):
    codec = make_codec(spec)
    msg = sample_message(spec)
    for pos in range(len(msg)):
        for bit in range(8):
            bad = bytearray(msg)
            bad[pos] ^= 1 << bit
            with pytest.raises(CorruptMessageError):
                codec.decode(bad, CodecState(0), "w")
    for cut in range(len(msg)):
        with pytest.raises(CorruptMessageError):
            codec.decode(msg[:cut], CodecState(0), "w")
    for extra in (b"\0", b"\xff" * 3, bytes(msg[-4:]), bytes(range(9))):
        with pytest.raises(CorruptMessageError):
            codec.decode(msg + extra, CodecState(0), "w")


@pytest.mark.parametrize("spec", SPECS)
def test_a_message_for_another_codec_or_other_parameters_is_rejected(spec):
    msg = sample_message(spec)
    others = [s for s in SPECS if make_codec(s).spec() != make_codec(spec).spec()]
    for other in others:
        with pytest.raises(CorruptMessageError, match="encoded by"):
            make_codec(other).decode(msg, CodecState(0), "w")


@pytest.mark.parametrize("spec", SPECS)
def test_payload_and_framing_add_up_to_the_buffer(spec):
    msg = sample_message(spec, 300)
    payload, framing = wire.measure(msg)
    assert payload + framing == len(msg)
    _, parts = wire.unpack(msg)
    part_bytes = sum(p.numel() * p.element_size() for p in parts.parts.values())
    assert part_bytes <= payload <= part_bytes + 8 * len(parts.meta)
    assert framing <= 48  # a binary header, not a JSON one


def test_framing_of_small_messages():
    control = make_codec("fp32").encode(torch.tensor(3.0))  # a 0-d control value
    assert len(control) <= 24 and wire.measure(control) == (4, len(control) - 4)
    one = make_codec("fp32").encode(torch.tensor([1.5]))
    assert len(one) == 20 and wire.measure(one) == (4, 16)
    big = make_codec("fp32").encode(torch.zeros(1024, 784))
    assert wire.measure(big) == (1024 * 784 * 4, len(big) - 1024 * 784 * 4)
    assert len(big) - 1024 * 784 * 4 <= 24


@settings(max_examples=200, deadline=None)
@given(meta=st.dictionaries(st.sampled_from(["lo", "hi", "bits", "first", "count", "values.numel", "codes.lo"]),
                            st.one_of(st.integers(-2**62, 2**62), st.floats(allow_nan=False), st.floats(width=32, allow_nan=False)),
                            max_size=7),
       shape=st.lists(st.integers(0, 5), max_size=4))
def test_meta_and_shape_survive_the_header(meta, shape):
    numel = 1
    for s in shape:
        numel *= s
    payload = Payload(parts={"values": torch.arange(numel, dtype=torch.float32)}, meta=dict(meta))
    msg = wire.pack(1, 1234, torch.float32, tuple(shape), payload)
    header, back = wire.unpack(msg)
    assert header["shape"] == tuple(shape) and header["codec_id"] == 1 and header["digest"] == 1234
    assert back.meta == meta and all(type(back.meta[k]) is type(v) or isinstance(v, bool) for k, v in meta.items())
    assert torch.equal(back.parts["values"], payload.parts["values"])


def test_unknown_names_are_refused_at_encode_time():
    with pytest.raises(ValueError, match="wire.NAMES"):
        wire.pack(1, 0, torch.float32, (1,), Payload(parts={"nonsense": torch.zeros(1)}))


@pytest.mark.parametrize("spec", SPECS)
def test_edited_header_fields_with_a_recomputed_checksum_never_escape(spec):
    """An adversary edits header bytes and fixes the checksum: decoding raises
    CorruptMessageError or gives a tensor, never another error."""
    import random
    import struct
    from thinwire.engine.wire import checksum
    codec = make_codec(spec)
    msg = sample_message(spec)
    header_end = len(msg) - 4 - sum(p.numel() * p.element_size() for p in wire.unpack(msg)[1].parts.values())
    rng = random.Random(spec)
    edits = [(pos, value) for pos in range(1, max(2, header_end)) for value in (0, 0x7F, 0x80, 0xFF)]
    edits += [(rng.randrange(1, max(2, header_end)), rng.randrange(256)) for _ in range(200)]
    for pos, value in edits:
        bad = bytearray(msg)
        bad[pos] = value
        bad[-4:] = struct.pack("<I", checksum(memoryview(bad)[:-4]))
        try:
            codec.decode(bad, CodecState(0), "w")
        except CorruptMessageError:
            pass


def test_huge_claimed_sizes_are_refused_before_allocating():
    huge = wire.pack(1, make_codec("fp32").digest, torch.float32, (2**20, 2**20), Payload(parts={"values": torch.zeros(4)}))
    with pytest.raises(CorruptMessageError, match="more than"):
        make_codec("fp32").decode(huge)
    codec = make_codec("binquant(bits=4, coder='huffman')")
    msg = codec.encode(torch.randn(1000))
    header, payload = wire.unpack(msg)
    meta = dict(payload.meta, sync=2**31 - 1)
    forged = wire.pack(codec.codec_id, codec.digest, torch.float32, (1000,), Payload(parts=dict(payload.parts), meta=meta))
    # one chunk either way: the decoder pads for min(sync, n) symbols, not for 2^31 - 1
    assert torch.equal(codec.decode(forged), codec.decode(msg))
    beyond = wire.pack(codec.codec_id, codec.digest, torch.float32, (1000,),
                       Payload(parts=dict(payload.parts), meta=dict(payload.meta, sync=2**31)))
    with pytest.raises(CorruptMessageError, match="bad sync"):  # no sync beyond what a message can hold
        codec.decode(beyond)
    many = wire.pack(codec.codec_id, codec.digest, torch.float32, (2**30,), Payload(parts=dict(payload.parts), meta=dict(payload.meta)))
    with pytest.raises(CorruptMessageError, match=r"claims 1073741824 values, more than its \d+ bytes can carry"):
        codec.decode(many)
    with pytest.raises(CorruptMessageError, match="cannot fit"):  # allowed that many, the stream still cannot hold them
        codec.decode(many, max_values=2**30)


BAD_META = [float("nan"), float("inf"), -1, 0, 3, 2**40, 1e300, -1e300, 0.5]


@pytest.mark.parametrize("spec", SPECS)
def test_forged_meta_values_decode_to_finite_values_or_are_refused(spec):
    """Every meta entry of a real message set to NaN, Inf, negative, zero, huge or
    fractional values, with a valid checksum: decode and merge either raise
    ``CorruptMessageError`` or give finite values of the header's shape (the encoders
    refuse NaN and Inf, so no valid message decodes to them)."""
    codec = make_codec(spec)
    message = sample_message(spec, n=40)
    header, payload = wire.unpack(message)
    for name in payload.meta:
        for value in BAD_META:
            meta = dict(payload.meta, **{name: value})
            forged = wire.pack(codec.codec_id, codec.digest, header["dtype"], header["shape"],
                               Payload(parts={k: v.clone() for k, v in payload.parts.items()}, meta=meta))
            for decode in (lambda m: codec.decode(m, CodecState(0), "w"),
                           lambda m: codec.merge(m, torch.zeros(header["shape"]), CodecState(0), "w")):
                try:
                    out = decode(forged)
                except CorruptMessageError:
                    continue
                if isinstance(out, torch.Tensor):
                    assert out.shape == header["shape"] and bool(torch.isfinite(out).all()), (name, value)


@pytest.mark.parametrize("spec", SPECS)
def test_a_message_written_into_a_reused_buffer_is_the_same_bytes(spec):
    """``encode(..., out=)`` over a buffer full of other bytes, longer or shorter than the
    message: the same bytes as a fresh encode (padding zeroed), in the same buffer object."""
    codec = make_codec(spec)
    x = torch.randn(3000, generator=torch.Generator().manual_seed(1)).reshape(30, 100)
    fresh = codec.encode(x, CodecState(5), "x")
    for size in (len(fresh) + 999, len(fresh), max(0, len(fresh) - 77), 0):
        out = bytearray(b"\xa5" * size)
        again = codec.encode(x, CodecState(5), "x", out=out)
        assert again is out and again == fresh
    with pytest.raises(ValueError, match="out=bytes is not allowed"):
        codec.encode(x, CodecState(5), "x", out=bytes(10))


@pytest.mark.parametrize("numel", [0, 1, 1000, (4 << 20) + 13, 3 << 22])
def test_the_parallel_checksum_is_the_crc_of_the_whole_buffer(numel):
    import crc32c
    from thinwire.engine.wire.checksum import combine, fill_and_checksum
    data = torch.randint(0, 256, (numel,), dtype=torch.uint8, generator=torch.Generator().manual_seed(numel))
    raw = data.numpy().tobytes()
    assert wire.checksum(memoryview(raw)) == crc32c.crc32c(raw)
    cut = numel // 3
    assert combine(crc32c.crc32c(raw[:cut]), crc32c.crc32c(raw[cut:]), numel - cut) == crc32c.crc32c(raw)
    message = bytearray(b"\x11" * (numel + 9))
    crc = fill_and_checksum(message, numel + 5, [(5, data.numpy())])
    assert message[5:numel + 5] == raw and crc == crc32c.crc32c(bytes(message[:numel + 5]))


@pytest.mark.parametrize("nbytes", [0, 5, (8 << 20) - 1, (8 << 20) + 4097])
def test_new_message_buffers_are_zeroed_bytearrays_of_their_size(nbytes):
    """Large ones come from ``PyByteArray_Resize`` and ``madvise`` where the system has them;
    with neither, from ``bytearray(n)``: either way zeroed, resizable bytearrays."""
    import sys

    from thinwire.engine.wire import buffers
    assert buffers._FUNCTIONS is not None or not sys.platform.startswith("linux")
    for functions in (buffers._FUNCTIONS, None):
        buffer = buffers.message_buffer(nbytes, functions)
        assert type(buffer) is bytearray and len(buffer) == nbytes
        assert buffer.count(0) == nbytes
        buffer.extend(b"\x01")
        assert buffer[-1] == 1 and len(buffer) == nbytes + 1
