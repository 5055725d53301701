"""The device CRC-32C (``kernels/triton_crc.py``) gives the message checksum's value, run
on the CPU by Triton's interpreter (``TRITON_INTERPRET=1``, set before triton is imported,
so in a process of its own)."""


import kernel_choice
import pytest

from thinwire.codecs.kernels import crc_math, triton_crc

CHECK = r"""
import os
os.environ["TRITON_INTERPRET"] = "1"
import crc32c, numpy as np, torch
from thinwire.codecs import CorruptMessageError, make_codec
from thinwire.codecs.kernels import triton_affine, triton_crc
B = triton_crc.BLOCK
rng = np.random.default_rng(5)
# empty, shorter than a 16-byte step, around a lane, a block and two blocks, three blocks
for n in [0, 1, 15, 16, 17, 63, 64, 65, B - 1, B, B + 1, 2 * B + 3, 3 * B]:
    data = rng.integers(0, 256, n, dtype=np.uint8)
    got, want = triton_crc.crc32c(torch.from_numpy(data)), crc32c.crc32c(data.tobytes())
    assert got == want, (n, hex(got), hex(want))
# the blocks' CRCs joined over several rounds of groups (as past 2^10 blocks), padded groups
triton_crc.JOIN_LEVELS = 1
for n in [2 * B, 3 * B + 1, 5 * B - 2]:
    data = rng.integers(0, 256, n, dtype=np.uint8)
    assert triton_crc.crc32c(torch.from_numpy(data)) == crc32c.crc32c(data.tobytes()), n
triton_crc.JOIN_LEVELS = 10
assert triton_crc.crc32c(torch.zeros(B + 5, dtype=torch.uint8)) == crc32c.crc32c(bytes(B + 5))
# a real message: its trailer is the CRC-32C of the bytes before it
message = make_codec("quantize(bits=8)").encode(torch.randn(30_000, generator=torch.Generator().manual_seed(2)))
body = torch.frombuffer(message, dtype=torch.uint8)[:-4].clone()
assert triton_crc.crc32c(body) == int.from_bytes(bytes(message[-4:]), "little")
# the tensor form a message tensor's trailer is copied from: the CRC's bits, little-endian
assert bytes(triton_crc.crc32c_tensor(body).view(torch.uint8).numpy()) == bytes(message[-4:])
assert triton_crc.crc32c_tensor(torch.zeros(0, dtype=torch.uint8)).tolist() == [0]
# the trailer written by the last kernel, one block or joined, and the CRC returned beside it
for n in [5, B - 3, 3 * B + 7]:
    data = torch.from_numpy(rng.integers(0, 256, n, dtype=np.uint8))
    trailer = torch.full((4,), 7, dtype=torch.uint8)
    got = triton_crc.crc32c_tensor(data, trailer)
    want = crc32c.crc32c(data.numpy().tobytes())
    assert int.from_bytes(bytes(trailer.numpy()), "little") == want == int(got.item()) & 0xFFFFFFFF, n
# words written after the CRC was made with zeros there (a range kept on the device) added to it,
# in place and into the trailer: one word, two, the first and the last of the body
for n, offsets in [(12, (0,)), (40, (8, 20)), (B + 9, (3, B + 1)), (3 * B, (17, 25))]:
    data = rng.integers(0, 256, n, dtype=np.uint8)
    zeroed = data.copy()
    for at in offsets:
        zeroed[at:at + 4] = 0
    crc = triton_crc.crc32c_tensor(torch.from_numpy(zeroed[:-4].copy()))
    trailer = torch.zeros(4, dtype=torch.uint8)
    triton_affine.with_words(crc, torch.from_numpy(data), offsets, trailer)
    want = crc32c.crc32c(data[:-4].tobytes())
    assert int(crc.item()) & 0xFFFFFFFF == want == int.from_bytes(bytes(trailer.numpy()), "little"), (n, offsets)
# message tensors written and read as on a GPU (the kernel checksums them and writes their
# trailer): the host message's bytes, decoded to the same values
from thinwire.codecs import CodecState
from thinwire.codecs.kernels import device
from thinwire.codecs.wire import tensor_message
tensor_message._on_device = lambda t: True
x = torch.randn(5_000, generator=torch.Generator().manual_seed(3))
for spec in ["fp32", "fp16", "quantize(bits=8)", "qsgd(bits=4, bucket=64)", "topk(ratio=0.01)"]:
    codec = make_codec(spec)
    host = codec.encode(x, CodecState(1), "w")
    with device.forced():
        moved = codec.encode(x, CodecState(1), "w", out=torch.empty(0, dtype=torch.uint8))
        assert bytes(moved.numpy()) == bytes(host), spec
        assert torch.equal(codec.decode(moved, CodecState(0), "w"), codec.decode(host, CodecState(0), "w")), spec
        moved[len(host) // 2] ^= 1
        try:
            codec.decode(moved, CodecState(0), "w")
            raise AssertionError(f"{spec}: a damaged message decoded")
        except CorruptMessageError:
            pass
# one plain part (fp32's on a GPU), after a header of any length
from thinwire.codecs import Payload, wire
for n in (1, 3_001, 9_000):
    payload = Payload(parts={"values": torch.randn(n)}, meta={"lo": 1.5})
    host = wire.pack(1, 0xABC, torch.float32, (n,), payload)
    moved = wire.pack(1, 0xABC, torch.float32, (n,), payload, torch.empty(0, dtype=torch.uint8))
    assert bytes(moved.numpy()) == bytes(host), n
assert tensor_message.DEVICE_CRC_FAILURE is None
# the lanes joined by shifts: the same CRCs, one block or joined, and the trailer it writes
triton_crc.KERNEL = "shifted"
for n in [0, 1, 63, 64, 65, B - 1, B, B + 1, 3 * B + 7]:
    data = rng.integers(0, 256, n, dtype=np.uint8)
    trailer = torch.full((4,), 7, dtype=torch.uint8)
    got = triton_crc.crc32c_tensor(torch.from_numpy(data), trailer if n else None)
    want = crc32c.crc32c(data.tobytes())
    assert int(got.item()) & 0xFFFFFFFF == want, ("shifted", n)
    assert not n or int.from_bytes(bytes(trailer.numpy()), "little") == want, ("shifted trailer", n)
triton_crc.KERNEL = "neither"
try:
    triton_crc.crc32c(torch.zeros(5, dtype=torch.uint8))
    raise AssertionError("an unknown kernel was accepted")
except ValueError as exc:
    assert "KERNEL must be one of" in str(exc) and "'neither'" in str(exc)
print("ok")
"""


WORDS = r"""
import os
os.environ["TRITON_INTERPRET"] = "1"
import crc32c, numpy as np, torch
from thinwire.codecs import CodecState, CorruptMessageError, make_codec
from thinwire.codecs.kernels import device, triton_crc, triton_halves
from thinwire.codecs.wire import tensor_message
triton_crc.KERNEL = "words"
B = triton_crc.BLOCK
rng = np.random.default_rng(7)
# every tail length (0-3 bytes past whole words), around a lane's step, a block, joined blocks
for n in [0, 1, 2, 3, 4, 5, 6, 7, 1023, 1024, 1025, B - 1, B, B + 1, B + 2, 2 * B + 3, 3 * B]:
    data = rng.integers(0, 256, n, dtype=np.uint8)
    assert triton_crc.crc32c(torch.from_numpy(data)) == crc32c.crc32c(data.tobytes()), n
    # copied into the middle of a buffer, with a prefix of host bytes, into a trailer
    for prefix in [b"", b"\x01\x02\x03", bytes(range(20))]:
        target = torch.full((n + 8,), 7, dtype=torch.uint8)
        trailer = torch.full((4,), 9, dtype=torch.uint8)
        got = triton_crc.crc32c_copy(torch.from_numpy(data), target[4:4 + n], prefix, trailer)
        want = crc32c.crc32c(prefix + data.tobytes())
        assert int(got.item()) & 0xFFFFFFFF == want == int.from_bytes(bytes(trailer.numpy()), "little"), (n, prefix)
        assert bytes(target.numpy()) == b"\7" * 4 + data.tobytes() + b"\7" * 4, (n, prefix)
# a buffer that does not start on a word goes to the byte kernel (the same CRC)
data = torch.from_numpy(rng.integers(0, 256, 5000, dtype=np.uint8))
assert triton_crc.crc32c(data[1:]) == crc32c.crc32c(data[1:].numpy().tobytes())
target = torch.zeros(5001, dtype=torch.uint8)
got = triton_crc.crc32c_copy(data[:4000], target[1:4001], b"ab")
assert int(got.item()) & 0xFFFFFFFF == crc32c.crc32c(b"ab" + data[:4000].numpy().tobytes())
assert torch.equal(target[1:4001], data[:4000])
# blocks joined over several rounds of groups
triton_crc.JOIN_LEVELS = 1
for n in [2 * B, 3 * B + 1, 5 * B - 2]:
    data = rng.integers(0, 256, n, dtype=np.uint8)
    assert triton_crc.crc32c(torch.from_numpy(data)) == crc32c.crc32c(data.tobytes()), n
triton_crc.JOIN_LEVELS = 10
# messages kept on a device: written with the copy and the CRC in one pass, decoded into a
# large out the same way, the host message's bytes and values; damage anywhere is refused
tensor_message._on_device = lambda t: True
tensor_message.COPY_CHECKED_BYTES = 0
passes = []  # (kernel entry, bytes or values) of each one-pass copy or cast
for module, entry in ((triton_crc, "crc32c_copy"), (triton_halves, "crc32c_cast")):
    setattr(module, entry, lambda *a, real=getattr(module, entry), entry=entry, **k:
            passes.append((entry, a[0].numel())) or real(*a, **k))
x = torch.randn(5_001, generator=torch.Generator().manual_seed(9))
x[[3, 7, 11]] = torch.tensor([float("nan"), float("inf"), 1e-6])  # carried as the host kernels write them
for spec, n, entry, width in [("fp32", 5_001, "crc32c_copy", 4), ("fp16", 5_001, "crc32c_cast", 2),
                              ("bf16", 3, "crc32c_cast", 2), ("fp16", 4_000, "crc32c_cast", 2),
                              ("fp32", 1, "crc32c_copy", 4)]:
    codec = make_codec(spec)
    host = codec.encode(x[:n], CodecState(1), "w")
    with device.forced():
        passes.clear()
        moved = codec.encode(x[:n], CodecState(1), "w", out=torch.empty(0, dtype=torch.uint8))
        assert [p[0] for p in passes] == [entry], (spec, passes)  # the one part written in one pass
        assert bytes(moved.numpy()) == bytes(host), spec
        want = codec.decode(host, CodecState(0), "w")
        passes.clear()
        out = torch.empty(n, dtype=want.dtype)
        got = codec.decode(moved, CodecState(0), "w", out=out)
        assert got is out and torch.equal(got.view(torch.int32), want.view(torch.int32)), spec
        assert [p[0] for p in passes] == [entry], (spec, passes)  # and read back in one pass, checked
        first_value = len(host) - width * n - 4
        for at in [first_value, len(host) // 2, len(host) - 5, len(host) - 1]:
            damaged = moved.clone()
            damaged[at] ^= 0x10
            out = torch.zeros(n, dtype=want.dtype)
            try:
                codec.decode(damaged, CodecState(0), "w", out=out)
                raise AssertionError(f"{spec}: a message damaged at byte {at} decoded")
            except CorruptMessageError:
                pass
            if at >= first_value:  # a value or the trailer damaged: nothing of the message stays in out
                assert torch.isnan(out).all(), (spec, at)
# a damaged header (shape no longer fits out) is a damaged message, not a wrong out
codec = make_codec("fp32")
x = torch.randn(4_000, generator=torch.Generator().manual_seed(1))
with device.forced():
    moved = codec.encode(x, CodecState(1), "w", out=torch.empty(0, dtype=torch.uint8))
    for at in range(5, 24):
        damaged = moved.clone()
        damaged[at] ^= 0x04
        try:
            codec.decode(damaged, CodecState(0), "w", out=torch.zeros(4_000))
            raise AssertionError(f"header byte {at} damaged and decoded")
        except CorruptMessageError:
            pass
    # a sound message and a wrong out: a ValueError naming out
    try:
        codec.decode(moved, CodecState(0), "w", out=torch.zeros(3_999))
        raise AssertionError("a wrong out was accepted")
    except ValueError as exc:
        assert "out must be" in str(exc)
assert tensor_message.DEVICE_CRC_FAILURE is None
# a one-pass write the device refuses: the message is written the ordinary way, the host's bytes
x = torch.randn(3_000, generator=torch.Generator().manual_seed(2))
host = make_codec("fp32").encode(x, CodecState(1), "w")
real_copy = triton_crc.crc32c_copy
def refused(*a, **k):
    raise RuntimeError("refused here")
triton_crc.crc32c_copy = refused
with device.forced():
    moved = make_codec("fp32").encode(x, CodecState(1), "w", out=torch.empty(0, dtype=torch.uint8))
assert bytes(moved.numpy()) == bytes(host) and "refused here" in tensor_message.DEVICE_CRC_FAILURE
triton_crc.crc32c_copy = real_copy
print("ok")
"""


FOLD = r"""
import os
os.environ["TRITON_INTERPRET"] = "1"
import crc32c, numpy as np, torch
from thinwire.codecs import CodecState, make_codec
from thinwire.codecs.kernels import device, triton_crc, triton_uniform
from thinwire.codecs.wire import tensor_message
triton_crc.JOIN = "fold"
B = triton_crc.BLOCK
rng = np.random.default_rng(13)
launched = []  # the kernels each CRC launches
for name in ("_block_crcs", "_block_words", "_join"):
    kernel = getattr(triton_crc, name)
    class Counted:
        def __init__(self, kernel, name):
            self.kernel, self.name = kernel, name
        def __getitem__(self, grid):
            launched.append(self.name)
            return self.kernel[grid]
    setattr(triton_crc, name, Counted(kernel, name))
# split 1024: two tables of 1024 powers; split 2: 2 x 2, so 5 blocks use the far table, and
# past 4 blocks (split^2) the tree joins them
for split, kernel, n in [(1024, "shifted", 2 * B + 3), (1024, "words", B + 1), (1024, "words", 5 * B - 2),
                         (2, "shifted", 4 * B), (2, "words", 3 * B + 5), (2, "words", 5 * B - 2)]:
    triton_crc.FOLD_SPLIT, triton_crc.KERNEL = split, kernel
    data = rng.integers(0, 256, n, dtype=np.uint8)
    trailer = torch.full((4,), 7, dtype=torch.uint8)
    launched.clear()
    got = triton_crc.crc32c_tensor(torch.from_numpy(data), trailer)
    want = crc32c.crc32c(data.tobytes())
    assert int(got.item()) & 0xFFFFFFFF == want == int.from_bytes(bytes(trailer.numpy()), "little"), (split, kernel, n)
    blocks = -(-n // B)
    assert launched == ([launched[0]] if blocks <= split * split else [launched[0], "_join"]), (split, n, launched)
    tally = triton_crc._FOLDS[("cpu", 0, split)]
    assert tally[:2].tolist() == [0, 0] and tally[2] == split.bit_length() - 1  # reset for the next CRC
triton_crc.FOLD_SPLIT = 1024
# messages kept on a device, written and read in one pass (a copy; 8-bit codes), folded: the host's bytes
tensor_message._on_device = lambda t: True
tensor_message.COPY_CHECKED_BYTES = 0
triton_crc.KERNEL, triton_uniform.KERNEL = "words", "triton"
x = torch.randn(3 * B // 4 + 11, generator=torch.Generator().manual_seed(4))
for spec in ("fp32", "quantize(bits=8)"):
    codec = make_codec(spec)
    host = codec.encode(x, CodecState(1), "w")
    with device.forced():
        moved = codec.encode(x, CodecState(1), "w", out=torch.empty(0, dtype=torch.uint8))
        assert bytes(moved.numpy()) == bytes(host), spec
        out = torch.empty_like(x)
        assert torch.equal(codec.decode(moved, CodecState(0), "w", out=out), codec.decode(host, CodecState(0), "w"))
assert tensor_message.DEVICE_CRC_FAILURE is None
triton_crc.JOIN = "neither"
try:
    triton_crc.crc32c(torch.zeros(2 * B, dtype=torch.uint8))
    raise AssertionError("an unknown join was accepted")
except ValueError as exc:
    assert "JOIN must be one of" in str(exc) and "'neither'" in str(exc)
print("ok")
"""


@pytest.mark.skipif(not triton_crc.AVAILABLE, reason="triton is in requirements.lock; absent only outside make setup")
@pytest.mark.parametrize("script", [CHECK, WORDS, FOLD], ids=["slicing-and-shifted", "words", "folded"])
def test_the_device_crc_equals_the_message_checksum_under_the_interpreter(script):
    kernel_choice.passes(script)


INTERPRETED = r"""
import os
os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported: the kernels are the interpreter's
import torch
from thinwire.codecs.kernels import triton_crc
assert triton_crc.interpreted() and triton_crc.triton_runs(torch.zeros(4))
del os.environ["TRITON_INTERPRET"]
assert not triton_crc.interpreted() and not triton_crc.triton_runs(torch.zeros(4))
print("ok")
"""


@pytest.mark.skipif(not triton_crc.AVAILABLE, reason="triton is in requirements.lock; absent only outside make setup")
def test_cpu_tensors_go_to_the_kernels_only_where_the_interpreter_made_them(monkeypatch):
    """``TRITON_INTERPRET=1`` set after triton was imported leaves the kernels compiled, with no
    driver for CPU tensors: those stay with torch's operations."""
    import torch
    kernel_choice.passes(INTERPRETED)
    if type(triton_crc._join).__name__ != "InterpretedFunction":  # this process imported triton without it
        monkeypatch.setenv("TRITON_INTERPRET", "1")
        assert not triton_crc.interpreted() and not triton_crc.triton_runs(torch.zeros(4))


def test_powers_of_x_have_inverses():
    """``inverse`` undoes a product by x^(8s) (how "words" takes its tail's zero padding out)."""
    for s in range(0, 70, 3):
        assert crc_math.multiply(crc_math.x_8n(s), crc_math.inverse(crc_math.x_8n(s))) == crc_math.ONE
        assert crc_math.multiply(crc_math.inverse(crc_math.x_8n(s)), crc_math.x_8n(s + 5)) == crc_math.x_8n(5)
    with pytest.raises(ValueError, match="no inverse"):
        crc_math.inverse(0)


def test_the_word_tables_step_and_shift_a_lane_as_combine_does():
    """"words": one step moves a lane's CRC by 32 LANES bits; lane l's shift appends the
    (LANES - l) words after it."""
    product, shifts = (t.numpy().view("uint32") for t in triton_crc._word_tables("cpu"))
    lanes = triton_crc.WORD_LANES
    a = 0x1234567
    got = 0
    for j in range(4):
        got ^= int(product[0][j][(a >> (8 * j)) & 255])
    assert got == crc_math.combine(a, 0, 4 * lanes)
    for lane in (0, 5, lanes - 1):
        assert crc_math.multiply(int(shifts[lane]), a) == crc_math.combine(a, 0, 4 * (lanes - lane))


def test_the_tables_multiply_as_crc_math_does():
    """A constant's product table gives crc_math's product; x^(8n) joins CRCs as combine does."""
    import numpy as np
    rng = np.random.default_rng(0)
    constants = [crc_math.x_8n(n) for n in (1, 64, 16384, 12345)]
    tables = triton_crc.product_tables(constants)
    for k, table in zip(constants, tables):
        for a in rng.integers(0, 2 ** 32, 20, dtype=np.uint64).tolist():
            got = 0
            for j in range(4):
                got ^= int(table[j][(a >> (8 * j)) & 255])
            assert got == crc_math.multiply(k, a)
    for n in (1, 7, 4096):
        a, b = 0x12345678, 0x9ABCDEF0
        assert crc_math.multiply(crc_math.x_8n(n), a) ^ b == crc_math.combine(a, b, n)


def test_the_lane_shifts_move_a_lane_to_the_end_of_its_block():
    """Lane l's constant is x^(8 SEG (LANES - 1 - l)): what ``combine`` multiplies by to
    append the bytes of the lanes after it."""
    import torch
    shifts = triton_crc._lane_shifts("cpu").numpy().view("uint32")
    lanes, seg = triton_crc.LANES, triton_crc.SEG
    assert len(shifts) == lanes and shifts[-1] == 1 << 31  # the last lane: x^0
    for lane in (0, 1, lanes // 2):
        a = 0x1234567 * (lane + 1) & 0xFFFFFFFF
        assert crc_math.multiply(int(shifts[lane]), a) == crc_math.combine(a, 0, seg * (lanes - 1 - lane))


def test_bad_buffers_name_what_is_allowed():
    import torch
    with pytest.raises((ValueError, RuntimeError), match="uint8|triton"):
        triton_crc.crc32c(torch.zeros(4, dtype=torch.float32))


def test_the_fold_tables_move_a_block_past_the_blocks_after_it():
    """"fold": block i of B is moved by x^(8 BLOCK (B - 1 - i)), the product of the near
    table's power of k mod S and the far table's power of k div S (k = B - 1 - i)."""
    tables = triton_crc._fold_tables(8)
    a = 0x2468ACE1
    for k in (0, 1, 7, 8, 9, 63):
        moved = crc_math.multiply(crc_math.multiply(a, int(tables[0][k % 8])), int(tables[1][k // 8]))
        assert moved == crc_math.combine(a, 0, triton_crc.BLOCK * k), k
