"""The device CRC-32C (``kernels/triton_crc.py``) gives the message checksum's value, run
on the CPU by Triton's interpreter (``TRITON_INTERPRET=1``, set before triton is imported,
so in a process of its own)."""


import kernel_choice
import pytest

from thinwire.engine.kernels import crc_math, triton_crc

CHECK = r"""
import os
os.environ["TRITON_INTERPRET"] = "1"
import crc32c, numpy as np, torch
from thinwire.codecs import CorruptMessageError, make_codec
from thinwire.engine.kernels import triton_affine, triton_crc
B = triton_crc.BLOCK
rng = np.random.default_rng(5)
# empty, shorter than a 16-byte step, around a lane, a block and two blocks, three blocks
for n in [0, 1, 15, 16, 17, 63, 64, 65, B - 1, B, B + 1, 2 * B + 3, 3 * B]:
    data = rng.integers(0, 256, n, dtype=np.uint8)
    got, want = triton_crc.crc32c(torch.from_numpy(data)), crc32c.crc32c(data.tobytes())
    assert got == want, (n, hex(got), hex(want))
# the blocks' CRCs joined over several rounds of groups (as past 2^10 blocks), padded groups
for n in [2 * B, 3 * B + 1, 5 * B - 2]:
    data = rng.integers(0, 256, n, dtype=np.uint8)
    assert triton_crc.crc32c(torch.from_numpy(data), join_levels=1) == crc32c.crc32c(data.tobytes()), n
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
from thinwire.engine.kernels import device
from thinwire.engine.wire import tensor_message
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
from thinwire.codecs import Payload
from thinwire.engine import wire
for n in (1, 3_001, 9_000):
    payload = Payload(parts={"values": torch.randn(n)}, meta={"lo": 1.5})
    host = wire.pack(1, 0xABC, torch.float32, (n,), payload)
    moved = wire.pack(1, 0xABC, torch.float32, (n,), payload, torch.empty(0, dtype=torch.uint8))
    assert bytes(moved.numpy()) == bytes(host), n
print("ok")
"""


@pytest.mark.skipif(not triton_crc.AVAILABLE, reason="triton is in requirements.lock; absent only outside make setup")
def test_the_device_crc_equals_the_message_checksum_under_the_interpreter():
    kernel_choice.passes(CHECK)


def test_a_device_crc_that_fails_raises_naming_the_device_and_the_cause(monkeypatch):
    """A device CRC kernel that a compiler or driver refuses is an error, not a silent switch
    to the host's checksum."""
    import torch
    from thinwire.codecs import CodecState, make_codec
    from thinwire.engine import DeviceChecksumError
    from thinwire.engine.kernels import device
    from thinwire.engine.wire import tensor_message

    def refused(*args, **kwargs):
        raise RuntimeError("refused here")
    monkeypatch.setattr(tensor_message, "_on_device", lambda t: True)
    monkeypatch.setattr(triton_crc, "crc32c_tensor", refused)
    with device.forced(), pytest.raises(DeviceChecksumError, match="failed on cpu: RuntimeError: refused here"):
        make_codec("fp32").encode(torch.randn(300), CodecState(1), "w", out=torch.empty(0, dtype=torch.uint8))


INTERPRETED = r"""
import os
os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported: the kernels are the interpreter's
import torch
from thinwire.engine.kernels import triton_crc
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
    """``inverse`` undoes a product by x^(8s) (how ``by_words`` takes its tail's zero padding out)."""
    for s in range(0, 70, 3):
        assert crc_math.multiply(crc_math.x_8n(s), crc_math.inverse(crc_math.x_8n(s))) == crc_math.ONE
        assert crc_math.multiply(crc_math.inverse(crc_math.x_8n(s)), crc_math.x_8n(s + 5)) == crc_math.x_8n(5)
    with pytest.raises(ValueError, match="no inverse"):
        crc_math.inverse(0)


def test_the_word_tables_step_and_shift_a_lane_as_combine_does():
    """``by_words``: one step moves a lane's CRC by 32 LANES bits; lane l's shift appends the
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
