"""The Triton scatter (``kernels/triton_scatter.py``) writes what the host's scatter writes,
for the kernel alone and through top-k's and gradient dropping's decodes, run on the CPU by
Triton's interpreter (``TRITON_INTERPRET=1``, set before triton is imported, so in a
process of its own)."""

import kernel_choice
import pytest

from thinwire.codecs.kernels import triton_crc, triton_scatter

CHECK = kernel_choice.DEVICE_MESSAGES + r"""
import numpy as np
from thinwire.codecs import make_codec
from thinwire.codecs.kernels import scatter, triton_scatter
triton_scatter.BLOCK, triton_scatter.PIECE = 64, 8  # several blocks, pieces and a part-filled last block
g = torch.Generator().manual_seed(3)
calls = []
real = triton_scatter._zeros_with
triton_scatter._zeros_with = type("Counted", (), {"__getitem__": lambda self, grid: (
    calls.append(grid), real[grid])[1]})()

# the kernel alone: every count from none to all, int64 and int32 indices, survivors at the
# ends of blocks and of the tensor, equal to the host's scatter (the CPU one, numba)
for n in (1, 63, 64, 65, 200, 1_000):
    for k in sorted({0, 1, min(7, n), n // 10, n // 2, n}):
        for dtype in (torch.int64, torch.int32):
            index = torch.sort(torch.randperm(n, generator=g)[:k]).values.to(dtype)
            values = torch.randn(k, generator=g)
            for triton_scatter.KERNEL in ("triton", "torch"):
                calls.clear()
                out = torch.full((n,), 7.0)
                with device.forced():
                    assert scatter.zeros_with(out, index, values) is out
                assert bool(calls) == (triton_scatter.KERNEL == "triton"), (n, k)
                want = scatter.zeros_with(torch.full((n,), 7.0), index.long(), values)
                assert torch.equal(out.view(torch.int32), want.view(torch.int32)), (n, k, dtype, triton_scatter.KERNEL)

# through the codecs' decodes (messages kept on the device): the host's values
triton_scatter.KERNEL = "triton"
x = torch.randn(1_500, generator=g)
for spec in ("topk(ratio=0.01)", "graddrop(ratio=0.99)", "graddrop(ratio=0.9, encoding='index_value')",
             "graddrop(ratio=0.95, bits=1)"):
    codec = make_codec(spec)
    m = encoded(codec, x)
    host = codec.decode(bytes(m), CodecState(0), "x")
    calls.clear()
    assert torch.equal(decoded(codec, m, x).view(torch.int32), host.view(torch.int32)), spec
    assert calls, spec

# a damaged index judged at a deferred block's end (clamped into out meanwhile, so neither
# ascending nor where it was): the kernel writes only inside out, and the block's end
# refuses the message with out NaN
import struct
from thinwire.codecs import CorruptMessageError
from thinwire.codecs.wire import deferred_checks, format as wire_format
from thinwire.codecs.wire.checksum import checksum
codec = make_codec("graddrop(ratio=0.99, encoding='index_value')")
host = bytearray(codec.encode(x, CodecState(0), "x"))
_, payload = wire_format.unpack(host)
index = payload.parts["index"]
at = index.data_ptr() - np.frombuffer(host, np.uint8).ctypes.data
for i, value in ((0, 1_499), (index.numel() - 1, 2**31 - 1), (1, -5)):
    bad = bytearray(host)
    bad[at + 4 * i:at + 4 * i + 4] = struct.pack("<i", value)
    bad[-4:] = struct.pack("<I", checksum(memoryview(bad)[:-4]))
    padded = torch.full((x.numel() + 64,), 7.0)  # out, and 64 values after it that nothing may write
    out = padded[:x.numel()]
    calls.clear()
    try:
        with deferred_checks():
            with device.forced():
                codec.decode(tensor_message.from_host(bytes(bad), "cpu"), CodecState(0), "x", out=out)
    except CorruptMessageError:
        assert calls and out.isnan().all() and (padded[x.numel():] == 7.0).all(), (i, value)
    else:
        raise AssertionError(f"index {value} at {i} decoded")
print("ok")
"""


@pytest.mark.skipif(not triton_crc.AVAILABLE, reason="triton is in requirements.lock; absent only outside make setup")
def test_the_triton_scatter_writes_what_the_host_writes_under_the_interpreter():
    kernel_choice.passes(CHECK)


@pytest.mark.parametrize("kernel, interpreted, dtype, strided, takes", kernel_choice.FLOAT32_CASES)
def test_the_kernel_takes_only_what_it_can(monkeypatch, kernel, interpreted, dtype, strided, takes):
    import torch
    out = torch.zeros(16, dtype=getattr(torch, dtype))
    chosen = kernel_choice.takes(monkeypatch, triton_scatter, kernel, interpreted,
                                 lambda: triton_scatter.usable(out[::2] if strided else out, torch.arange(3),
                                                               torch.ones(3)))
    assert chosen == (takes and triton_crc.AVAILABLE)


def test_an_unknown_kernel_is_refused(monkeypatch):
    import torch
    monkeypatch.setattr(triton_scatter, "KERNEL", "cuda")
    with pytest.raises(ValueError, match="KERNEL must be one of"):
        triton_scatter.usable(torch.zeros(8), torch.arange(3), torch.ones(3))


VARIANTS = r"""
import os, sys
os.environ["TRITON_INTERPRET"] = "1"
sys.path.insert(0, BENCHMARKS)
import json
import run, scatter_variants
from thinwire.codecs.kernels import triton_scatter
triton_scatter.BLOCK = 256  # several programs over a small tensor
calls = []
real = triton_scatter._zeros_with
triton_scatter._zeros_with = type("Counted", (), {"__getitem__": lambda self, grid: (
    calls.append(grid), real[grid])[1]})()
timer = lambda fn: (fn(), 1e-3)[1]
rows = scatter_variants.scatters(20_000, timer, "cpu", rounds=2)
rows += scatter_variants.decodes(20_000, timer, "cpu", rounds=2)
assert [r["what"] for r in rows] == ["scatter", "scatter", "topk(ratio=0.01)", "graddrop(ratio=0.99)"], rows
assert all(r["equal"] and r["survivors"] > 0 for r in rows), rows
assert 150 < rows[0]["survivors"] <= 200 and 10 < rows[1]["survivors"] <= 20 and rows[2]["survivors"] == 200, rows
assert len(calls) == 4 * 2 * 2 and triton_scatter.KERNEL == "torch", calls  # 2 rounds, a timed call and a kept one
doc = json.loads(run.GPU_RESULTS.read_text())
table = run.gpu_tables({**doc, "scatters": rows})["gpu_codecs"]
assert "| topk(ratio=0.01) | 20,000 | 200 | 1.000 | 1.000 | True |" in table, table[-2000:]
print("ok")
"""


@pytest.mark.skipif(not triton_crc.AVAILABLE, reason="triton is in requirements.lock; absent only outside make setup")
def test_the_sparse_write_bench_times_both_kernels_with_equal_outputs_under_the_interpreter():
    """``benchmarks/scatter_variants.py`` (``gpu_bench``'s part 18): the write alone and in the
    sparse codecs' decodes, by each kernel, with equal outputs; the library's kernel restored."""
    from pathlib import Path
    benchmarks = Path(__file__).resolve().parents[1] / "benchmarks"
    kernel_choice.passes(VARIANTS.replace("BENCHMARKS", repr(str(benchmarks))))
