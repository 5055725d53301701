"""The Triton QSGD kernels (``kernels/triton_qsgd.py``) give the host kernels' norms, bytes
and values, run on the CPU by Triton's interpreter (``TRITON_INTERPRET=1``, set before
triton is imported, so in a process of its own)."""

import kernel_choice
import pytest

from thinwire.engine.kernels import triton_crc, triton_qsgd

CHECK = r"""
import os
os.environ["TRITON_INTERPRET"] = "1"
import numpy as np, torch
from thinwire.codecs import CodecState, make_codec
from thinwire.engine.kernels import bitpack, device, qsgd, triton_qsgd
from thinwire.engine.wire import tensor_message
rng = np.random.default_rng(0)
assert triton_qsgd.VALUES == 64  # the interpreter's programs: several, the last one partly past the end
for bits in (2, 3, 5, 8):
    for bucket in (8, 16, 64, 128):  # 128: one bucket over more warps than a program of VALUES
        for n in (1, 7, 8, 9, 100, 1000):
            for norm in ("l2", "max"):
                x = rng.standard_normal(n).astype(np.float32)
                x[::7] *= 1e-3  # small levels; a zero and a negative zero
                x[0], x[-1] = 0.0, -0.0
                key = int(rng.integers(0, 2 ** 63)) * 2 + 1  # both key words
                norms = np.empty(-(-n // bucket), np.float32)
                host = np.empty(bitpack.packed_bytes(n, bits), np.uint8)
                qsgd.quantize_packed(x, bucket, norm, bits, key, norms, host)
                got, got_norms = torch.full((host.size,), 0xAB, dtype=torch.uint8), torch.full((norms.size,), 7.0)
                triton_qsgd.quantize_packed(torch.from_numpy(x), bucket, norm == "max", bits, key, got_norms, got)
                assert bytes(got.numpy()) == host.tobytes(), (bits, bucket, n, norm)
                assert got_norms.numpy().tobytes() == norms.tobytes(), (bits, bucket, n, norm)
                step = (norms.astype(np.float64) / ((1 << (bits - 1)) - 1)).astype(np.float32)
                want = np.full(n, 5.0, np.float32)
                qsgd.dequantize_packed(host, bucket, step, bits, want)
                back = torch.full((n,), 7.0)
                triton_qsgd.dequantize_packed(torch.from_numpy(host), bucket, torch.from_numpy(norms), bits, back)
                assert back.numpy().tobytes() == want.tobytes(), (bits, bucket, n, norm)
# a bucket whose norm is so small that s / norm overflows float32: the largest float32
x = np.full(16, 1e-44, np.float32)
norms, host = np.empty(2, np.float32), np.empty(16, np.uint8)
qsgd.quantize_packed(x, 8, "max", 8, 99, norms, host)
got, got_norms = torch.empty(16, dtype=torch.uint8), torch.empty(2)
triton_qsgd.quantize_packed(torch.from_numpy(x), 8, True, 8, 99, got_norms, got)
assert bytes(got.numpy()) == host.tobytes() and got_norms.numpy().tobytes() == norms.tobytes()
# through the codec on the device path (message tensors): the host's bytes and values;
# 12 bits, a bucket of 100 and Elias coding stay on torch's operations
tensor_message._on_device = lambda t: False
x = torch.randn(3001, generator=torch.Generator().manual_seed(1))
calls = []
real = triton_qsgd.quantize_packed
triton_qsgd.quantize_packed = lambda *a, **k: calls.append(1) or real(*a, **k)
for spec, fused in [("qsgd(bits=4, bucket=64)", True), ("qsgd(bits=8, bucket=512, norm='max')", True),
                    ("qsgd(bits=12, bucket=64)", False), ("qsgd(bits=4, bucket=100)", False),
                    ("qsgd(bits=4, bucket=64, coding='elias')", False)]:
    codec = make_codec(spec)
    host = codec.encode(x, CodecState(3), "x")
    calls.clear()
    with device.forced():
        moved = codec.encode(x, CodecState(3), "x", out=torch.empty(0, dtype=torch.uint8))
        assert bytes(moved.numpy()) == bytes(host), spec
        assert bool(calls) == fused, spec
        out = torch.empty_like(x)
        codec.decode(moved, CodecState(0), "x", out=out)
    assert torch.equal(out, codec.decode(host, CodecState(0), "x")), spec
# NaN or Inf: refused on this path too, naming the tensor
codec = make_codec("qsgd(bits=4, bucket=64)")
for bad in (float("nan"), float("inf")):
    y = x.clone()
    y[2000] = bad
    with device.forced():
        try:
            codec.encode(y, CodecState(3), "w7", out=torch.empty(0, dtype=torch.uint8))
            raise AssertionError(f"{bad} was quantized")
        except ValueError as exc:
            assert "NaN or Inf" in str(exc) and "'w7'" in str(exc), exc
# a sound checksum over norms that are not (NaN, infinite, negative): refused before the
# kernel decodes; a norm of -0.0 is >= 0 and decodes
from thinwire.codecs import CorruptMessageError
from thinwire.engine import wire
calls = []
real_dequantize = triton_qsgd.dequantize_packed
triton_qsgd.dequantize_packed = lambda *a, **k: calls.append(1) or real_dequantize(*a, **k)
for bad in (float("nan"), float("inf"), -1.0, -0.0):
    header, payload = wire.unpack(codec.encode(x, CodecState(3), "x"))
    payload.parts["norms"] = payload.parts["norms"].clone()
    payload.parts["norms"][5] = bad
    forged = wire.pack(header["codec_id"], header["digest"], header["dtype"], header["shape"], payload)
    calls.clear()
    with device.forced():
        try:
            codec.decode(forged, CodecState(0), "x", out=torch.empty_like(x))
            assert bad == 0.0 and calls == [1], (bad, calls)
        except CorruptMessageError as exc:
            assert bad != 0.0 and "finite and non-negative" in str(exc) and not calls, (bad, exc, calls)
print("ok")
"""


KEPT = r"""
import os
os.environ["TRITON_INTERPRET"] = "1"
import crc32c, numpy as np, torch
from thinwire.codecs import CodecState, CorruptMessageError, make_codec
from thinwire.engine.kernels import device
from thinwire.engine.wire import deferred_checks, tensor_message
# messages kept on a device (as on a GPU), written and read by the Triton kernels: the host's
# bytes and values, outside and inside a deferred_checks block; damage to a code, a norm or
# the trailer refused
tensor_message._on_device = lambda t: True
x = torch.randn(20_001, generator=torch.Generator().manual_seed(3))
for spec in ("qsgd(bits=8, bucket=512)", "qsgd(bits=4, bucket=64, norm='max')", "qsgd(bits=3, bucket=64)"):
    codec = make_codec(spec)
    host = codec.encode(x, CodecState(5), "x")
    with device.forced():
        moved = codec.encode(x, CodecState(5), "x", out=torch.empty(0, dtype=torch.uint8))
        assert bytes(moved.numpy()) == bytes(host), spec
        want = codec.decode(host, CodecState(0), "x")
        out = torch.empty_like(x)
        assert codec.decode(moved, CodecState(0), "x", out=out) is out and torch.equal(out, want), spec
        with deferred_checks():
            inside = torch.empty_like(x)
            codec.decode(moved, CodecState(0), "x", out=inside)
        assert torch.equal(inside, want), spec
        norms_at = len(host) - 4 - 4 * -(-x.numel() // codec.bucket)
        damage_refused(codec, moved, x, (norms_at - x.numel() * codec.bits // 8, norms_at + 1, len(host) - 1), False)
# a message whose norm and checksum both fail, in a deferred block: one damaged message,
# named once, its values NaN
codec = make_codec("qsgd(bits=8, bucket=8)")
y = torch.randn(20, generator=torch.Generator().manual_seed(4))
with device.forced():
    bad = codec.encode(y, CodecState(5), "x", out=torch.empty(0, dtype=torch.uint8)).clone()
bad[-8:-4] = torch.tensor([-1.0]).view(torch.uint8)  # the last norm, whose bytes end the body
out = torch.empty_like(y)
try:
    with deferred_checks():
        with device.forced():
            codec.decode(bad, CodecState(0), "x", out=out)
    raise AssertionError("a damaged message decoded")
except CorruptMessageError as e:
    assert str(e).startswith("1 of 1 messages") and out.isnan().all(), str(e)
# ... and that norm under a valid checksum, outside a block: refused
bad[-4:] = torch.frombuffer(bytearray(crc32c.crc32c(bytes(bad[:-4].numpy())).to_bytes(4, "little")), dtype=torch.uint8)
try:
    with device.forced():
        codec.decode(bad, CodecState(0), "x", out=torch.empty_like(y))
    raise AssertionError("a negative norm decoded")
except CorruptMessageError as e:
    assert "qsgd" in str(e) and "finite and non-negative" in str(e), str(e)
# NaN: refused, naming the tensor
y = x.clone()
y[7] = float("nan")
with device.forced():
    try:
        make_codec("qsgd(bits=8, bucket=512)").encode(y, CodecState(3), "w7", out=torch.empty(0, dtype=torch.uint8))
        raise AssertionError("NaN quantized")
    except ValueError as exc:
        assert "NaN or Inf" in str(exc) and "'w7'" in str(exc), exc
print("ok")
"""


@pytest.mark.skipif(not triton_crc.AVAILABLE, reason="triton is in requirements.lock; absent only outside make setup")
@pytest.mark.parametrize("script", [CHECK, kernel_choice.DAMAGE_REFUSED + KEPT], ids=["kernels", "kept-on-device"])
def test_the_triton_kernels_give_the_host_kernels_bytes_under_the_interpreter(script):
    kernel_choice.passes(script)


@pytest.mark.parametrize("interpreted, bits, bucket, strided, takes", [
    (True, 8, 512, False, True),
    (True, 2, 8, False, True),
    (True, 9, 512, False, False),   # 9 to 16 bits: torch's operations
    (True, 8, 100, False, False),   # a bucket that is not a power of two
    (True, 8, 4096, False, False),  # more than BUCKET_MAX values
    (True, 8, 512, True, False),    # not contiguous
    (False, 8, 512, False, False),  # CPU tensors count only under the interpreter
])
def test_the_kernel_takes_only_what_it_can(monkeypatch, interpreted, bits, bucket, strided, takes):
    import torch
    x = torch.zeros(16)
    chosen = kernel_choice.takes(monkeypatch, interpreted, lambda: triton_qsgd.usable(bits, bucket, x[::2] if strided else x))
    assert chosen == (takes and triton_crc.AVAILABLE)
