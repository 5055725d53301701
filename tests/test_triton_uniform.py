"""The Triton quantize and dequantize kernels (``kernels/triton_uniform.py``) give the host
kernels' bytes and values, run on the CPU by Triton's interpreter (``TRITON_INTERPRET=1``,
set before triton is imported, so in a process of its own)."""


import kernel_choice
import pytest

from thinwire.engine.kernels import triton_crc, triton_uniform

CHECK = r"""
import contextlib, os
os.environ["TRITON_INTERPRET"] = "1"
import numpy as np, torch
from thinwire.codecs import CodecState, make_codec
from thinwire.engine.kernels import bitpack, device, triton_rows, triton_uniform, uniform
from thinwire.engine.wire import tensor_message
rng = np.random.default_rng(0)
assert triton_uniform.GROUPS == 16  # the interpreter's programs: several, the last one partly past the end
for bits in range(1, 9):
    for n in (1, 7, 8, 9, 129, 1000):
        for shift in (0.0, 50.0):  # both forms of the multiply-add
            x = torch.from_numpy(rng.standard_normal(n).astype(np.float32) + shift)
            lo, hi = float(x.min()), float(x.max())
            scale = ((1 << bits) - 1) / (hi - lo) if hi > lo else 0.0  # one value: all codes 0
            host = torch.empty(bitpack.packed_bytes(n, bits), dtype=torch.uint8)
            uniform.quantize_packed(x, lo, scale, bits, host)
            got = torch.full_like(host, 0xAB)
            triton_uniform.quantize_packed(x, lo, scale, bits, got)
            assert torch.equal(got, host), (bits, n, shift)
            step = (hi - lo) / ((1 << bits) - 1)
            want = uniform.dequantize_packed(host, n, bits, lo, step)
            back = torch.full((n,), 7.0)
            triton_uniform.dequantize_packed(host, n, bits, lo, step, back)
            assert torch.equal(back.view(torch.int32), want.view(torch.int32)), (bits, n, shift)
# Oland & Raj's bin codes, in float64 as on the host: the host's packed bytes, the top bin
# holding the maximum, ranges of a few subnormals and of large magnitudes
from thinwire.engine.kernels.bin_quantize import bin_pack
for bits in range(1, 9):
    for n in (1, 7, 8, 9, 129, 1000):
        for x in (torch.from_numpy(rng.standard_normal(n).astype(np.float32)),
                  torch.from_numpy(rng.integers(-3, 4, n).astype(np.float32) * 1e-45),
                  torch.from_numpy(rng.standard_normal(n).astype(np.float32) * 1e37 + 3e37)):
            lo, hi = float(x.min()), float(x.max())
            if hi <= lo:
                continue
            host = bin_pack(x, lo, hi, bits)
            got = torch.full_like(host, 0xAB)
            triton_uniform.bin_packed(x, lo, (1 << bits) / (hi - lo), bits, got)
            assert torch.equal(got, host), (bits, n, lo, hi)
# through the codec on the device path (message tensors): the host's bytes and values;
# 12 bits stays on torch's operations
tensor_message._on_device = lambda t: False
calls = []
real_bins = triton_uniform.bin_packed
triton_uniform.bin_packed = lambda *a, **k: calls.append(1) or real_bins(*a, **k)
x = torch.randn(3001, generator=torch.Generator().manual_seed(2))
for bits in (1, 5, 8):
    codec = make_codec(f"binquant(bits={bits})")
    host = codec.encode(x, CodecState(0), "x")
    calls.clear()
    with device.forced():
        moved = codec.encode(x, CodecState(0), "x", out=torch.empty(0, dtype=torch.uint8))
    assert calls and bytes(moved.numpy()) == bytes(host), bits
x = torch.randn(3001, generator=torch.Generator().manual_seed(1))
for bits in (1, 3, 8, 12):
    codec = make_codec(f"quantize(bits={bits})")
    host = codec.encode(x, CodecState(0), "x")
    with device.forced():
        moved = codec.encode(x, CodecState(0), "x", out=torch.empty(0, dtype=torch.uint8))
        assert bytes(moved.numpy()) == bytes(host), bits
        out = torch.empty_like(x)
        codec.decode(moved, CodecState(0), "x", out=out)
    assert torch.equal(out, codec.decode(host, CodecState(0), "x")), bits
# MQGrad's row codes (colquant) in one kernel on the device path: the host's bytes and
# values for matrices whose rows end inside a group of 8, a constant row (eps keeps its
# span; eps=0 gives it scale 0), a row of subnormals and rows of large magnitudes
calls = []
real_rows, real_values = triton_rows.row_packed, triton_rows.row_values
triton_rows.row_packed = lambda *a, **k: calls.append(1) or real_rows(*a, **k)
triton_rows.row_values = lambda *a, **k: calls.append(2) or real_values(*a, **k)
shapes = [(5, 13), (3, 8), (1, 1), (7,), (2, 1000)]
for bits in (1, 3, 5, 8, 12):
    for eps in (1e-6, 0.0):
        codec = make_codec(f"colquant(bits={bits}, eps={eps})")
        for shape in shapes:
            w = torch.from_numpy(rng.standard_normal(shape).astype(np.float32))
            if len(shape) == 2 and shape[0] >= 3:
                w[1] = 0.25
                w[2] = torch.from_numpy(rng.integers(-3, 4, shape[1]).astype(np.float32) * 1e-45)
                w[-1] = w[-1] * 1e37 + 3e37
            host = codec.encode(w, CodecState(0), "w")
            calls.clear()
            with device.forced():
                moved = codec.encode(w, CodecState(0), "w", out=torch.empty(0, dtype=torch.uint8))
                again = codec.encode(w, CodecState(0), "w")  # into a message in host memory
            assert bytes(moved.numpy()) == bytes(host) == bytes(again), (bits, eps, shape)
            want = codec.decode(host, CodecState(0), "w")
            for message in (moved, host):  # from device memory and from host memory
                out = torch.full_like(w, 7.0)
                with device.forced():
                    codec.decode(message, CodecState(0), "w", out=out)
                assert torch.equal(out.view(torch.int32), want.view(torch.int32)), (bits, eps, shape)
            assert calls == ([1, 1, 2, 2] if bits <= 8 else []), (bits, calls)
# NaN or Inf anywhere is refused from the rows' ranges, on both paths
for bad in (float("nan"), float("inf"), -float("inf")):
    w = torch.randn(4, 9)
    w[2, 5] = bad
    for forced in (False, True):
        try:
            with device.forced() if forced else contextlib.nullcontext():
                make_codec("colquant(bits=4)").encode(w, CodecState(0), "w")
            raise AssertionError(f"{bad} encoded")
        except ValueError as e:
            assert "NaN or Inf" in str(e), e
print("ok")
"""


KEPT = r"""
import os
os.environ["TRITON_INTERPRET"] = "1"
import crc32c, numpy as np, torch
from thinwire.codecs import CodecState, CorruptMessageError, make_codec
from thinwire.engine.kernels import device, triton_rows
from thinwire.engine.wire import deferred_checks, tensor_message
rng = np.random.default_rng(1)
# messages kept on a device (as on a GPU), written and read by the Triton kernels: the host's
# bytes and values; damage to a code or the trailer refused
tensor_message._on_device = lambda t: True
x = torch.randn(5_001, generator=torch.Generator().manual_seed(3))
tensors = [x, torch.full((33,), -3.25), torch.tensor([1e-45, 4e-45, 2e-45]), torch.tensor([-3.4e38, 3.4e38, 1.0])]
for spec in ("quantize(bits=8)", "quantize(bits=4)", "binquant(bits=8)", "binquant(bits=4)",
             "binquant(bits=8, coder='huffman')"):
    codec = make_codec(spec)
    for t in tensors if spec.startswith("binquant") else tensors[:1]:
        host = codec.encode(t, CodecState(0), "x")
        with device.forced():
            moved = codec.encode(t, CodecState(0), "x", out=torch.empty(0, dtype=torch.uint8))
            assert bytes(moved.numpy()) == bytes(host), spec
            out = torch.empty_like(t)
            assert codec.decode(moved, CodecState(0), "x", out=out) is out
            assert torch.equal(out.view(torch.int32), codec.decode(host, CodecState(0), "x").view(torch.int32)), spec
    with device.forced():  # the last code, the trailer
        damage_refused(codec, moved, t, (len(host) - 5, len(host) - 1), False)
# MQGrad's 8-bit row codes (``triton_rows``): the first of three parts, the rows' lo and hi
# after them; a constant row, a row of subnormals, rows of large magnitudes. Inside a
# ``deferred_checks`` block a received message's codes are read as they are checksummed
# (``row_values_crc``), its ranges judged at the block's end
passes = []
real_values_crc = triton_rows.row_values_crc
triton_rows.row_values_crc = lambda *a, **k: passes.append("row_values_crc") or real_values_crc(*a, **k)
w = torch.from_numpy(rng.standard_normal((37, 1031)).astype(np.float32))
w[1] = 0.25
w[2] = torch.from_numpy(rng.integers(-3, 4, 1031).astype(np.float32) * 1e-45)
w[-1] = w[-1] * 1e37 + 3e37
for spec, eight in (("colquant(bits=8)", True), ("colquant(bits=8, eps=0.0)", True), ("colquant(bits=4)", False)):
    codec = make_codec(spec)
    host = codec.encode(w, CodecState(0), "x")
    want = codec.decode(host, CodecState(0), "x").view(torch.int32)
    with device.forced():
        moved = codec.encode(w, CodecState(0), "x", out=torch.empty(0, dtype=torch.uint8))
        assert bytes(moved.numpy()) == bytes(host), spec
        out = torch.empty_like(w)
        assert codec.decode(moved, CodecState(0), "x", out=out) is out and torch.equal(out.view(torch.int32), want), spec
        passes.clear()
        with deferred_checks():
            codec.decode(moved, CodecState(0), "x", out=out)
        assert torch.equal(out.view(torch.int32), want) and passes == (["row_values_crc"] if eight else []), spec
        ranges = len(host) - 4 - 8 * w.shape[0]
        damage_refused(codec, moved, w, (ranges - 1, ranges, len(host) - 1), False)
        bad = moved.clone()  # a range no encoder sends (hi below lo), under a valid checksum: refused
        bad[ranges + 4 * w.shape[0]:ranges + 4 * w.shape[0] + 4] = torch.tensor([-1e30]).view(torch.uint8)
        bad[-4:] = torch.frombuffer(bytearray(crc32c.crc32c(bytes(bad[:-4].numpy())).to_bytes(4, "little")),
                                    dtype=torch.uint8)
        try:
            codec.decode(bad, CodecState(0), "x", out=torch.zeros_like(w))
            raise AssertionError("a forged range decoded")
        except CorruptMessageError as e:
            assert "colquant" in str(e), e
        bad[-1] ^= 0x20  # its range and its checksum both fail, in a block: one damaged message, named once
        out = torch.zeros_like(w)
        try:
            with deferred_checks():
                codec.decode(bad, CodecState(0), "x", out=out)
            raise AssertionError("a damaged message decoded")
        except CorruptMessageError as e:
            assert str(e).startswith("1 of 1 messages") and out.isnan().all(), str(e)
print("ok")
"""


@pytest.mark.skipif(not triton_crc.AVAILABLE, reason="triton is in requirements.lock; absent only outside make setup")
@pytest.mark.parametrize("script", [CHECK, kernel_choice.DAMAGE_REFUSED + KEPT], ids=["kernels", "kept-on-device"])
def test_the_triton_kernels_give_the_host_kernels_bytes_under_the_interpreter(script):
    kernel_choice.passes(script)


def test_the_kernels_take_what_they_can(monkeypatch):
    import torch
    x = torch.zeros(8)
    assert kernel_choice.takes(monkeypatch, True, lambda: triton_uniform.usable(8, x, x)) == triton_crc.AVAILABLE
    # CPU tensors, compiled Triton: torch's operations
    assert not kernel_choice.takes(monkeypatch, False, lambda: triton_uniform.usable(8, x, x))
    kernel_choice.takes(monkeypatch, True, lambda: None)
    assert not triton_uniform.usable(9, x, x)          # 9 to 16 bits: torch's operations
    assert not triton_uniform.usable(8, x, x[::2])     # not contiguous
