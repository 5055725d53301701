"""Codecs whose data-dependent values stay on the device inside ``deferred_checks``:
min-max quantization's range (``kernels/triton_range.py``, ``Quantize.compress_deferred``)
QSGD's bucket norms (``QSGD.compress_deferred``) and MQGrad's rows' ranges
(``ColumnQuantize.compress_deferred``), Oland & Raj's bin quantizer's range
(``BinQuantize.compress_deferred``), top-k's received indices' range and gradient
dropping's received offsets' checks. A message
tensor is encoded and decoded with nothing read by the host (top-k: its opening only), to
the host's bytes and values; the block's end refuses a NaN or Inf tensor, a damaged byte,
and a header, norms, ranges or indices no encoder writes.
Message tensors on the CPU taken as device ones, the kernels under Triton's interpreter
(in a process of its own)."""

import kernel_choice

CHECK = kernel_choice.DEVICE_MESSAGES + r"""
import struct
import numpy as np
from thinwire.codecs import CorruptMessageError, make_codec
from thinwire.engine.kernels import extrema, triton_range
from thinwire.engine.wire import checksum, deferred, deferred_checks


def bits_of(value):
    return np.float32(value).tobytes()


def matches_host(codec, x, pending, seed=0):
    # encode and decode inside a block: the host's bytes and values, `pending` checks and nothing
    # read until the block's end, one read then
    host = bytes(codec.encode(x, CodecState(seed), "x"))
    want = codec.decode(host, CodecState(0), "x")
    del reads[:]
    with deferred_checks() as checks:
        with device.forced():
            m = codec.encode(x, CodecState(seed), "x", out=torch.empty(0, dtype=torch.uint8))
        out = decoded(codec, m, x)
        assert len(checks.pending) == pending and not reads, (codec.spec(), tuple(x.shape), reads)
    assert len(reads) == 1, reads
    assert bytes(m.numpy()) == host, (codec.spec(), tuple(x.shape))
    assert torch.equal(out.view(torch.int32), want.view(torch.int32)), (codec.spec(), tuple(x.shape))


def opened_with_one_read(codec, x, pending=1):
    # a message of the host's bytes decoded inside a block to the host's values: `pending` checks
    # left for the block's end (what the decode found and did not read), one read as it opens
    host = bytes(codec.encode(x, CodecState(0), "x"))
    m = encoded(codec, x)
    assert bytes(m.numpy()) == host
    del reads[:]
    with deferred_checks() as checks:
        out = decoded(codec, m, x)
        assert len(checks.pending) == pending and len(reads) == 1, (codec.spec(), reads)
    assert len(reads) == 2 and torch.equal(out, codec.decode(host, CodecState(0), "x"))


def refused_at_end(codec, bad):
    # a tensor with NaN or Inf encoded inside a block: the encode's ValueError at the block's end
    try:
        with deferred_checks():
            m = encoded(codec, bad, key="w")
    except ValueError as e:
        assert "'w' contains NaN or Inf" in str(e), str(e)
        return m
    raise AssertionError(f"{codec.spec()}: a non-finite tensor was sent")


def forged_is_refused(codec, host, floats, like, at_end=False):
    # host message bytes with float32 values written at {offset: value}, under a valid checksum:
    # decoded inside a block, the block ends with CorruptMessageError and the values NaN
    # (at_end: the decode itself returned, as on a GPU it must: a damaged index wrote nowhere)
    forged = bytearray(host)
    for at, value in floats.items():
        forged[at:at + 4] = struct.pack("<f", value)
    forged[-4:] = struct.pack("<I", checksum(memoryview(forged)[:-4]))
    out, returned = torch.empty_like(like), False
    try:
        with deferred_checks():
            with device.forced():
                codec.decode(tensor_message.from_host(forged, "cpu"), CodecState(0), "x", out=out)
            returned = True
    except CorruptMessageError:
        assert out.isnan().all(), floats
        assert returned or not at_end, f"{codec.spec()}: refused before the block's end"
    else:
        raise AssertionError(f"{codec.spec()}: {floats} decoded")


g = torch.Generator().manual_seed(5)
tensors = {
    "several programs": torch.randn(40_000, generator=g),  # three extrema programs of 16,384
    "positive": torch.rand(300, generator=g) + 2,
    "negative": -torch.rand(300, generator=g) - 7,
    "signed zeros": torch.tensor([0.0, -0.0, 0.0]),
    "zero and positive": torch.tensor([1.5, 0.0, 3.0]),
    "negative zero and negative": torch.tensor([-0.0, -2.0]),
    "constant": torch.full((17,), -3.25),
    "subnormal range": torch.tensor([1e-45, 4e-45, 2e-45]),  # a scale float32 cannot hold
    "float32's limits": torch.tensor([-3.4e38, 3.4e38, 1.0]),  # a step beyond float32
}

# 1. the range: every bit of lo and hi as the host finds them, NaN and Inf included
for name, x in {**tensors, "nan": torch.tensor([1.0, float("nan"), -1.0]), "inf": torch.tensor([-float("inf"), 0.5])}.items():
    lo, hi = triton_range.extrema(x).view(torch.float32).tolist()
    want = extrema.extrema(x)
    assert (bits_of(lo), bits_of(hi)) == (bits_of(want[0]), bits_of(want[1])), (name, lo, hi, want)

# 2. encode and decode in a block: the host's bytes and values, nothing read until the end, one read then
for bits in (1, 3, 8):
    codec = make_codec(f"quantize(bits={bits})")
    for name, x in tensors.items():
        if name == "several programs" and bits == 1:
            continue  # the interpreter's slowest case; 3 and 8 bits cover its programs
        matches_host(codec, x, pending=2)  # the range sent, the CRC (with the range read)

# 3. outside a block the encode reads its range on the host, as before (no check left behind)
codec = make_codec("quantize(bits=4)")
x = tensors["several programs"]
with device.forced():
    assert bytes(codec.encode(x, CodecState(0), "x", out=torch.empty(0, dtype=torch.uint8)).numpy()) == \
        bytes(codec.encode(x, CodecState(0), "x"))
assert deferred.active() is None

# 4. every damaged byte, meta and trailer included, ends the block with the error and NaN values
codec = make_codec("quantize(bits=8)")
x = torch.randn(24, generator=g)
with deferred_checks():
    m = encoded(codec, x)
every_damaged_byte_caught(codec, m, x)

# 5. a range no encoder writes (lo > hi, or NaN), under a valid checksum, is refused at the end
host = bytearray(codec.encode(x, CodecState(0), "x"))
lo_at, hi_at = [off for _, off in tensor_message.steady_layout(
    codec.codec_id, codec.digest, torch.float32, (24,), codec.steady_parts(24), tuple(codec.steady_meta().items())).meta]
for lo, hi in ((1.0, -1.0), (float("nan"), 1.0), (0.0, float("inf"))):
    forged_is_refused(codec, host, {lo_at: lo, hi_at: hi}, x)

# 6. NaN or Inf: refused at the block's end with the encode's ValueError; its message decodes to nothing
for bad in (torch.tensor([1.0, float("nan")]), torch.tensor([float("inf"), 1.0])):
    m = refused_at_end(codec, bad)
    out = torch.empty(2)
    try:
        with deferred_checks():
            with device.forced():
                codec.decode(m, CodecState(0), "w", out=out)
    except CorruptMessageError:
        assert out.isnan().all()
    else:
        raise AssertionError("a non-finite range decoded")

# 7. checks collected for a CUDA graph's replays: judged after each, and kept
later = deferred.DeferredChecks()
x = torch.randn(500, generator=g)
with deferred_checks(into=later):
    m = encoded(codec, x)
    out = decoded(codec, m, x)
assert len(later.pending) == 2
later.verify_all(keep=True)
assert torch.equal(out, codec.decode(bytes(m.numpy()), CodecState(0), "x"))
m[-1] ^= 2  # as if a replay had received a damaged message
try:
    later.verify_all(keep=True)
except CorruptMessageError:
    assert len(later.pending) == 2 and out.isnan().all()
else:
    raise AssertionError("no error")

# 8. QSGD: its norms' finiteness and range judged at the block's end, the host's bytes and values
for spec, sizes in (("qsgd(bits=8, bucket=512)", (5003, 7)), ("qsgd(bits=4, bucket=64, norm='max')", (300,))):
    codec = make_codec(spec)
    for x in [torch.randn(n, generator=g) for n in sizes] + [torch.zeros(40)]:
        matches_host(codec, x, pending=3, seed=3)  # the norms sent, the norms read, the CRC
codec = make_codec("qsgd(bits=8, bucket=8)")
x = torch.randn(20, generator=g)
every_damaged_byte_caught(codec, encoded(codec, x), x)
host = bytearray(codec.encode(x, CodecState(0), "x"))
for norm in (-1.0, float("inf"), float("nan")):  # a norm no encoder sends (the last bucket's ends the body)
    forged_is_refused(codec, host, {len(host) - 8: norm}, x)
bad = bytearray(host)
bad[-8:-4] = struct.pack("<f", -1.0)  # its checksum and its norms both fail: one damaged message, named once
try:
    with deferred_checks():
        decoded(codec, tensor_message.from_host(bad, "cpu"), x)
except CorruptMessageError as e:
    assert str(e).startswith("1 of 1 messages") and str(e).count("message for 'x'") == 1, str(e)
else:
    raise AssertionError("a damaged message decoded")
refused_at_end(codec, torch.tensor([1.0, float("inf")]))

# 9. MQGrad's per-row quantizer (a fixed bit width in its header): its rows' ranges judged at the block's end
for spec in ("colquant(bits=8)", "colquant(bits=3, max_floor=True)"):
    codec = make_codec(spec)
    for x in (torch.randn(50, 30, generator=g), -torch.rand(4, 5, generator=g), torch.randn(7, generator=g)):
        matches_host(codec, x, pending=3)  # the ranges sent, the ranges read, the CRC
codec = make_codec("colquant(bits=8)")
x = torch.randn(2, 3, generator=g)
every_damaged_byte_caught(codec, encoded(codec, x), x)
host = bytearray(codec.encode(x, CodecState(0), "x"))  # ..., lo (2 rows), hi (2 rows), trailer
for hi in (-10.0, float("nan"), float("inf")):  # row 1's hi below its lo, or not finite
    forged_is_refused(codec, host, {len(host) - 8: hi}, x)
refused_at_end(codec, torch.tensor([[1.0, 2.0], [float("nan"), 0.0]]))

# 10. top-k: a decode does not read its indices' range and order (its header and checksum are read as it opens)
codec = make_codec("topk(ratio=0.01)")
for x in (torch.randn(5003, generator=g), torch.randn(40, 30, generator=g)):
    opened_with_one_read(codec, x)
x = torch.randn(300, generator=g)  # k = 3
host = bytearray(codec.encode(x, CodecState(0), "x"))
first = len(host) - 4 - 2 * 4 * 3  # the first index; an index outside the tensor scatters nowhere else
second, = struct.unpack("<i", host[first + 4:first + 8])
for index in (-1, 300, 2**31 - 1, 299, second):  # below, past the end; after the last, a repeat: out of order
    bad = bytearray(host)
    bad[first:first + 4] = struct.pack("<i", index)
    forged_is_refused(codec, bytes(bad), {}, x)

# 11. Oland & Raj's bin quantizer (raw codes, one range, a fixed bit width in its header): as min-max's
for bits in (1, 3, 8):
    codec = make_codec(f"binquant(bits={bits})")
    for name, x in tensors.items():
        if name == "several programs" and bits == 1:
            continue
        matches_host(codec, x, pending=2)  # the range sent, the CRC (with the range read)
codec = make_codec("binquant(bits=8)")
x = torch.randn(24, generator=g)
every_damaged_byte_caught(codec, encoded(codec, x), x)
host = bytearray(codec.encode(x, CodecState(0), "x"))
lo_at, hi_at = [off for _, off in tensor_message.steady_layout(
    codec.codec_id, codec.digest, torch.float32, (24,), codec.steady_parts(24), tuple(codec.steady_meta().items())).meta]
for lo, hi in ((1.0, -1.0), (float("nan"), 1.0), (0.0, float("inf"))):
    forged_is_refused(codec, host, {lo_at: lo, hi_at: hi}, x)
refused_at_end(codec, torch.tensor([1.0, float("nan")]))

# 12. gradient dropping's offsets: a decode does not read their checks (its header and checksum
# are read as it opens); a forged gap or escape count is refused at the block's end
from thinwire.engine.wire import format as wire_format
codec = make_codec("graddrop(ratio=0.99)")
for x in (torch.randn(5003, generator=g), torch.randn(40, 300, generator=g)):
    opened_with_one_read(codec, x)
x = torch.randn(3000, generator=torch.Generator().manual_seed(1))
host = bytearray(codec.encode(x, CodecState(0), "x"))
_, payload = wire_format.unpack(host)
start = np.frombuffer(host, np.uint8).ctypes.data
words, escaped = payload.parts["offsets"], payload.parts["escapes"]
at_words, at_escaped = words.data_ptr() - start, escaped.data_ptr() - start
assert escaped.numel() and payload.meta["width"] == 8, (escaped, payload.meta)
short = next(i for i, w in enumerate(words.tolist()) if w != 255)
for where, value in ((at_words, b"\x00"),  # a gap of 0
                     (at_words + short, b"\xff"),  # one escape more than long gaps
                     (at_escaped, struct.pack("<i", 0)),  # a long gap of 0
                     (at_escaped, struct.pack("<i", 2**31 - 1))):  # an index past the tensor
    bad = bytearray(host)
    bad[where:where + len(value)] = value
    forged_is_refused(codec, bytes(bad), {}, x, at_end=True)
codec = make_codec("graddrop(ratio=0.99, encoding='index_value')")  # absolute indices: their order and range
opened_with_one_read(codec, torch.randn(5003, generator=g))
host = bytearray(codec.encode(x, CodecState(0), "x"))
_, payload = wire_format.unpack(host)
index = payload.parts["index"]
at_index = index.data_ptr() - np.frombuffer(host, np.uint8).ctypes.data
for i, value in ((0, -1), (1, index[0].item()), (index.numel() - 1, 3000)):  # below, not increasing, past
    bad = bytearray(host)
    bad[at_index + 4 * i:at_index + 4 * i + 4] = struct.pack("<i", value)
    forged_is_refused(codec, bytes(bad), {}, x, at_end=True)
codec = make_codec("graddrop(ratio=0.99, bits=1)")  # 1-bit values, a level table per segment: the segments'
opened_with_one_read(codec, torch.randn(5003, generator=g), pending=2)  # checks too
host = bytearray(codec.encode(x, CodecState(0), "x"))
_, payload = wire_format.unpack(host)
segments = payload.parts["segments"]
assert segments.tolist() == [0, 3000, 1], segments
at_segments = segments.data_ptr() - np.frombuffer(host, np.uint8).ctypes.data
for where, value in ((8, 2999), (16, 0)):  # values not covering the tensor; a segment of no column
    bad = bytearray(host)
    bad[at_segments + where:at_segments + where + 8] = struct.pack("<q", value)
    forged_is_refused(codec, bytes(bad), {}, x, at_end=True)
print("ok")
"""


def test_values_kept_on_the_device_give_the_hosts_messages_and_are_judged_at_the_blocks_end():
    kernel_choice.passes(CHECK)
