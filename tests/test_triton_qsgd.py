"""The Triton QSGD kernels (``kernels/triton_qsgd.py``) give the host kernels' norms, bytes
and values, run on the CPU by Triton's interpreter (``TRITON_INTERPRET=1``, set before
triton is imported, so in a process of its own)."""

import kernel_choice
import pytest

from thinwire.codecs.kernels import triton_crc, triton_qsgd

CHECK = r"""
import os
os.environ["TRITON_INTERPRET"] = "1"
import numpy as np, torch
from thinwire.codecs import CodecState, make_codec
from thinwire.codecs.kernels import bitpack, device, qsgd, triton_qsgd
from thinwire.codecs.wire import tensor_message
rng = np.random.default_rng(0)
triton_qsgd.VALUES = 64  # several programs, the last one partly past the end
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
triton_qsgd.KERNEL, triton_qsgd.VALUES = "triton", 512
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
from thinwire.codecs import CorruptMessageError, wire
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


ONE_PASS = r"""
import os
os.environ["TRITON_INTERPRET"] = "1"
import crc32c, numpy as np, torch
from thinwire.codecs import CodecState, CorruptMessageError, make_codec
from thinwire.codecs.kernels import bitpack, device, qsgd, triton_crc, triton_qsgd
from thinwire.codecs.wire import deferred_checks, tensor_message
assert not triton_qsgd.fuses(8, 512)  # off unless chosen
triton_qsgd.ONE_PASS = True
rng = np.random.default_rng(2)
# codes written, or read, and checksummed in one pass: the host's codes, norms, values and
# CRC, with a prefix and bytes after the codes (a message's norms); several blocks
for bits, bucket in ((8, 512), (8, 16), (4, 64), (2, 16)):
    assert triton_qsgd.fuses(bits, bucket)
    for n in (1, 100, 70_000):
        norm = ("l2", "max")[n % 2]
        x = rng.standard_normal(n).astype(np.float32)
        key = int(rng.integers(0, 2 ** 62)) * 2 + 1
        norms = np.empty(-(-n // bucket), np.float32)
        host = np.empty(bitpack.packed_bytes(n, bits), np.uint8)
        qsgd.quantize_packed(x, bucket, norm, bits, key, norms, host)
        prefix, rest = b"header" + bytes(2), 4 * norms.size + 3
        want = crc32c.crc32c(prefix + host.tobytes() + bytes(rest))
        got, got_norms = torch.full((host.size,), 0xAB, dtype=torch.uint8), torch.full((norms.size,), 7.0)
        crc = triton_qsgd.quantize_crc(torch.from_numpy(x), bucket, norm == "max", bits, key, got_norms, got, prefix,
                                       None, rest)
        assert bytes(got.numpy()) == host.tobytes() and got_norms.numpy().tobytes() == norms.tobytes(), (bits, n)
        assert int(crc.item()) & 0xFFFFFFFF == want, (bits, bucket, n)
        out = torch.full((n,), 5.0)
        crc = triton_qsgd.dequantize_crc(torch.from_numpy(host), bucket, torch.from_numpy(norms), bits, out, prefix, rest)
        step = (norms.astype(np.float64) / ((1 << (bits - 1)) - 1)).astype(np.float32)
        values = np.full(n, 5.0, np.float32)
        qsgd.dequantize_packed(host, bucket, step, bits, values)
        assert out.numpy().tobytes() == values.tobytes() and int(crc.item()) & 0xFFFFFFFF == want, (bits, bucket, n)
assert not any(triton_qsgd.fuses(bits, bucket) for bits, bucket in ((3, 64), (2, 8), (8, 2048), (4, 4096)))
# through the codec, messages kept on a device (as on a GPU) with the words CRC, its blocks'
# CRCs joined either way: the codes written and read in one pass, the host's bytes and
# values; damage to a code, a norm or the trailer refused, out left NaN
triton_crc.KERNEL = "words"
tensor_message._on_device = lambda t: True
tensor_message.COPY_CHECKED_BYTES = 0
passes = []
for entry in ("quantize_crc", "dequantize_crc"):
    setattr(triton_qsgd, entry, lambda *a, real=getattr(triton_qsgd, entry), entry=entry, **k:
            passes.append(entry) or real(*a, **k))
x = torch.randn(20_001, generator=torch.Generator().manual_seed(3))
for join in triton_crc.JOINS:
    triton_crc.JOIN = join
    for spec, one_pass in (("qsgd(bits=8, bucket=512)", True), ("qsgd(bits=4, bucket=64, norm='max')", True),
                           ("qsgd(bits=3, bucket=64)", False)):
        codec = make_codec(spec)
        host = codec.encode(x, CodecState(5), "x")
        with device.forced():
            passes.clear()
            moved = codec.encode(x, CodecState(5), "x", out=torch.empty(0, dtype=torch.uint8))
            assert bytes(moved.numpy()) == bytes(host) and passes == (["quantize_crc"] if one_pass else []), spec
            want = codec.decode(host, CodecState(0), "x")
            out = torch.empty_like(x)
            passes.clear()
            assert codec.decode(moved, CodecState(0), "x", out=out) is out and torch.equal(out, want), spec
            assert passes == (["dequantize_crc"] if one_pass else []), (spec, passes)
            with deferred_checks():
                inside = torch.empty_like(x)
                codec.decode(moved, CodecState(0), "x", out=inside)
            assert torch.equal(inside, want), spec
            norms_at = len(host) - 4 - 4 * -(-x.numel() // codec.bucket)
            damage_refused(codec, moved, x, (norms_at - x.numel() * codec.bits // 8, norms_at + 1, len(host) - 1),
                           one_pass)
# a message whose norm and checksum both fail, read in one pass in a deferred block: one
# damaged message, named once, its values NaN
codec = make_codec("qsgd(bits=8, bucket=8)")
y = torch.randn(20, generator=torch.Generator().manual_seed(4))
with device.forced():
    bad = codec.encode(y, CodecState(5), "x", out=torch.empty(0, dtype=torch.uint8)).clone()
bad[-8:-4] = torch.tensor([-1.0]).view(torch.uint8)  # the last norm, whose bytes end the body
out = torch.empty_like(y)
passes.clear()
try:
    with deferred_checks():
        with device.forced():
            codec.decode(bad, CodecState(0), "x", out=out)
    raise AssertionError("a damaged message decoded")
except CorruptMessageError as e:
    assert str(e).startswith("1 of 1 messages") and out.isnan().all() and passes == ["dequantize_crc"], (str(e), passes)
# ... and that norm under a valid checksum, outside a block: judged with the checksum, after
# the codes are read, in one read
import crc32c
bad[-4:] = torch.frombuffer(bytearray(crc32c.crc32c(bytes(bad[:-4].numpy())).to_bytes(4, "little")), dtype=torch.uint8)
out = torch.empty_like(y)
passes.clear()
try:
    with device.forced():
        codec.decode(bad, CodecState(0), "x", out=out)
    raise AssertionError("a negative norm decoded")
except CorruptMessageError as e:
    assert "qsgd" in str(e) and out.isnan().all() and passes == ["dequantize_crc"], (str(e), passes)
# NaN: refused on the one-pass path, naming the tensor, and not taken for a failing kernel
y = x.clone()
y[7] = float("nan")
with device.forced():
    try:
        make_codec("qsgd(bits=8, bucket=512)").encode(y, CodecState(3), "w7", out=torch.empty(0, dtype=torch.uint8))
        raise AssertionError("NaN quantized")
    except ValueError as exc:
        assert "NaN or Inf" in str(exc) and "'w7'" in str(exc), exc
assert tensor_message.DEVICE_CRC_FAILURE is None
# not chosen: two passes, the same bytes
triton_qsgd.ONE_PASS = False
codec = make_codec("qsgd(bits=8, bucket=512)")
with device.forced():
    passes.clear()
    moved = codec.encode(x, CodecState(5), "x", out=torch.empty(0, dtype=torch.uint8))
    out = torch.empty_like(x)
    codec.decode(moved, CodecState(0), "x", out=out)
assert passes == [] and bytes(moved.numpy()) == bytes(codec.encode(x, CodecState(5), "x")), passes
assert torch.equal(out, codec.decode(moved.clone(), CodecState(0), "x"))
print("ok")
"""


@pytest.mark.skipif(not triton_crc.AVAILABLE, reason="triton is in requirements.lock; absent only outside make setup")
@pytest.mark.parametrize("script", [CHECK, kernel_choice.DAMAGE_REFUSED + ONE_PASS], ids=["kernels", "one-pass"])
def test_the_triton_kernels_give_the_host_kernels_bytes_under_the_interpreter(script):
    kernel_choice.passes(script)


@pytest.mark.parametrize("kernel, interpreted, bits, bucket, strided, takes", [
    ("torch", True, 8, 512, False, False),    # the default: torch's operations
    ("triton", True, 8, 512, False, True),
    ("triton", True, 2, 8, False, True),
    ("triton", True, 9, 512, False, False),   # 9 to 16 bits: torch's operations
    ("triton", True, 8, 100, False, False),   # a bucket that is not a power of two
    ("triton", True, 8, 4096, False, False),  # more than BUCKET_MAX values
    ("triton", True, 8, 512, True, False),    # not contiguous
    ("triton", False, 8, 512, False, False),  # CPU tensors count only under the interpreter
])
def test_the_kernel_takes_only_what_it_can(monkeypatch, kernel, interpreted, bits, bucket, strided, takes):
    import torch
    x = torch.zeros(16)
    chosen = kernel_choice.takes(monkeypatch, triton_qsgd, kernel, interpreted,
                                 lambda: triton_qsgd.usable(bits, bucket, x[::2] if strided else x))
    assert chosen == (takes and triton_crc.AVAILABLE)


def test_an_unknown_kernel_is_refused(monkeypatch):
    import torch
    monkeypatch.setattr(triton_qsgd, "KERNEL", "cuda")
    with pytest.raises(ValueError, match="KERNEL must be one of"):
        triton_qsgd.usable(8, 512, torch.zeros(8))


VARIANTS = r"""
import os, sys
os.environ["TRITON_INTERPRET"] = "1"
sys.path.insert(0, BENCHMARKS)
import json
import qsgd_variants, run
from thinwire.codecs.kernels import triton_qsgd
rows = qsgd_variants.variants(3 * 1024 + 17, lambda fn: (fn(), 1e-3)[1], "cpu")  # the last program partly past the end
assert [(r["variant"], r["values_per_program"], r["warps"]) for r in rows[:3]] == [
    ("library", 512, 1), ("2,048 values, 4 warps", 2048, 4), ("1,024 values, 2 warps", 1024, 2)], rows
assert len(rows) == 9 and all(r["equal_to_library"] for r in rows), rows
assert (triton_qsgd.VALUES, triton_qsgd.WARPS) == (512, 1)  # the library's shape restored
doc = json.loads(run.GPU_RESULTS.read_text())
table = run.gpu_tables({**doc, "qsgd_variants": rows})["gpu_codecs"]
assert "| 2,048 values, 4 warps | 2,048 | 4 | 8 | max |" in table, table[-2000:]
# QSGD's, bin and row quantization's round trips in one pass and in two (part 16), messages kept
# on a device: the same messages and values, the one pass's kernels called on its side only
# (an encode and a decode a round), the settings restored
import one_passes
from thinwire.codecs.kernels import device, triton_crc, triton_range
from thinwire.codecs.quantize import binquant, column_minmax
from thinwire.codecs.wire import tensor_message
tensor_message._on_device = lambda t: True
tensor_message.COPY_CHECKED_BYTES = 0
with device.forced():
    rows = one_passes.passes(5_000, lambda fn: (fn(), 1e-3)[1], "cpu", rounds=2)
assert [r["codec"] for r in rows] == ["qsgd(bits=8, bucket=512)", "qsgd(bits=4, bucket=512)", "binquant(bits=8)",
                                     "colquant(bits=8)"]
assert all(r["same_messages"] and r["same_values"] and r["one_pass_calls"] == 2 * 2 for r in rows), rows
assert (triton_qsgd.ONE_PASS, binquant.ONE_PASS, column_minmax.ONE_PASS, triton_crc.KERNEL, triton_crc.JOIN) == (
    False, True, True, "shifted", "tree")
assert triton_qsgd.quantize_crc.__name__ == "quantize_crc" and triton_range.dequantize8_crc.__name__ == "dequantize8_crc"
table = run.gpu_tables({**doc, "one_passes": rows})["gpu_codecs"]
assert "| binquant(bits=8) | 5,000 | 1.000 | 1.000 | 4 | True | True |" in table, table[-2000:]
print("ok")
"""


@pytest.mark.skipif(not triton_crc.AVAILABLE, reason="triton is in requirements.lock; absent only outside make setup")
def test_other_program_shapes_give_the_library_s_norms_codes_and_values_under_the_interpreter():
    """``benchmarks/qsgd_variants.py`` and ``one_passes.py`` (``gpu_bench``'s parts 15 and 16):
    each program shape's outputs equal the library's, and the library's shape is restored;
    the round trip in one pass sends and decodes what two passes do, and the settings are
    restored."""
    from pathlib import Path
    benchmarks = Path(__file__).resolve().parents[1] / "benchmarks"
    kernel_choice.passes(VARIANTS.replace("BENCHMARKS", repr(str(benchmarks))))
