"""The Triton drop pass (``kernels/triton_drop.py``) keeps the survivors and writes the
residual of the host kernels and of the torch operations, and selects top-k's candidates, run on the CPU by Triton's
interpreter (``TRITON_INTERPRET=1``, set before triton is imported, so in a process of its
own)."""

import kernel_choice
import pytest

from thinwire.codecs.kernels import triton_crc, triton_drop

CHECK = r"""
import os
os.environ["TRITON_INTERPRET"] = "1"
import numpy as np, torch
from thinwire.codecs import CodecState, make_codec
from thinwire.codecs.kernels import device, triton_drop
from thinwire.codecs.sparsify.drop_pass import drop_pass
triton_drop.BLOCK, triton_drop.TOPK_BLOCK = 64, 128  # several chunks per segment, the last one partly past its end
rng = np.random.default_rng(0)


def compared(n, segments, keep, inclusive, with_gradient, with_source):
    x = torch.from_numpy(rng.standard_normal(n).astype(np.float32))
    x[::13] = 0.5  # ties at a threshold
    if n > 40:
        x[37], x[38] = float("nan"), float("inf")  # always survive
    g = torch.from_numpy(rng.standard_normal(n).astype(np.float32)) if with_gradient else None
    s = torch.from_numpy(rng.standard_normal(n).astype(np.float32)) if with_source else None
    results = []
    # the thresholds given as float64 on the device, not read (``found``), with a row beside them
    found = torch.tensor([[t for *_, t in segments], [7.0 + i for i in range(len(segments))]], dtype=torch.float64)
    unread = [(a, b, None) for a, b, _ in segments]
    for kernel in ("host", "torch", "triton", "torch found", "triton found"):
        residual = x.clone()
        triton_drop.KERNEL = "triton" if kernel.startswith("triton") else "torch"
        with device.forced() if kernel != "host" else torch.no_grad():
            if kernel.endswith("found"):
                index, values, rows = drop_pass(residual, g, unread, keep, inclusive, source=s, found=found)
                assert rows == found.tolist(), (kernel, rows)
            else:
                index, values = drop_pass(residual, g, segments, keep, inclusive, source=s)
        results.append((index, values.view(torch.int32), residual.view(torch.int32)))
    for kernel, got in zip(("torch", "triton", "torch found", "triton found"), results[1:]):
        for name, a, b in zip(("index", "values", "residual"), got, results[0]):
            assert torch.equal(a, b), (kernel, name, n, segments, keep, inclusive, with_gradient, with_source)


for triton_drop.DENSE in (0, 1 << 40):  # every compaction by rounds, then every one dense
    for n in (1, 63, 64, 65, 300):
        for segments in ([(0, n, 0.5)], [(0, n, float("-inf"))], [(0, n, 0.0)],
                         [(0, n // 2, 1.0), (n // 2, n // 2, 0.2), (n // 2, n, 0.5)]):  # an empty segment
            for keep in (True, False):
                for inclusive in (True, False):
                    for with_gradient, with_source in ((False, False), (True, False), (True, True)):
                        if keep or not with_gradient:  # a residual kept read only takes no gradient
                            compared(n, segments, keep, inclusive, with_gradient, with_source)
triton_drop.DENSE = 16
# through the codec, two steps (the residual carries over; the second's gradient added in the
# drop pass, its sample drawn ahead): the host's messages
triton_drop.KERNEL = "triton"
x = torch.randn(30, 101, generator=torch.Generator().manual_seed(1))  # 'local': a threshold per row
calls = []
real = triton_drop.drop
triton_drop.drop = lambda *a, **k: calls.append(1) or real(*a, **k)
for spec in ["graddrop(ratio=0.9)", "graddrop(ratio=0.99, bits=1)", "graddrop(ratio=0.9, scope='local', ties='keep')"]:
    host_state, device_state = CodecState(3), CodecState(3)
    codec = make_codec(spec)
    for step in (1.0, 0.5):
        host = codec.encode(x * step, host_state, "w")
        calls.clear()
        with device.forced():
            moved = codec.encode(x * step, device_state, "w")
        assert calls and bytes(moved) == bytes(host), (spec, step)
    assert device_state.scratch["graddrop.draws_ahead"].taken == 1, spec  # step 2's sample, drawn during step 1
# top-k's candidates by the same kernels: the host's messages; NaN and Inf anywhere refused
counted, chunked = [], []
real_chunks = triton_drop._chunks
triton_drop._chunks = lambda spans, where, block: chunked.append(block) or real_chunks(spans, where, block)
real_at_least = triton_drop.at_least
triton_drop.at_least = lambda *a, **k: counted.append(1) or real_at_least(*a, **k)
g = torch.Generator().manual_seed(2)
tensors = [torch.randn(5_000, generator=g), torch.randint(-3, 4, (5_000,), generator=g).float(),  # ties
           torch.zeros(300), torch.randn(7, generator=g)]
for ratio in (1e-4, 0.01, 0.3, 1.0):
    codec = make_codec(f"topk(ratio={ratio})")
    for x in tensors:
        host = codec.encode(x, CodecState(0), "w")
        counted.clear()
        with device.forced():
            moved = codec.encode(x, CodecState(0), "w")
        assert counted and bytes(moved) == bytes(host), (ratio, x.numel())
assert set(chunked) == {triton_drop.TOPK_BLOCK}, chunked  # top-k's candidates in chunks of their own size
for bad in (float("nan"), float("inf"), -float("inf")):
    x = torch.randn(5_000, generator=g)
    x[4_321] = bad
    with device.forced():
        try:
            make_codec("topk(ratio=0.01)").encode(x, CodecState(0), "w9")
            raise AssertionError(f"{bad} was ranked")
        except ValueError as exc:
            assert "NaN or Inf" in str(exc), exc
print("ok")
"""


@pytest.mark.skipif(not triton_crc.AVAILABLE, reason="triton is in requirements.lock; absent only outside make setup")
def test_the_triton_drop_pass_keeps_what_the_host_keeps_under_the_interpreter():
    kernel_choice.passes(CHECK)


@pytest.mark.parametrize("kernel, interpreted, dtype, strided, takes", kernel_choice.FLOAT32_CASES)
def test_the_kernel_takes_only_what_it_can(monkeypatch, kernel, interpreted, dtype, strided, takes):
    import torch
    x = torch.zeros(16, dtype=getattr(torch, dtype))
    chosen = kernel_choice.takes(monkeypatch, triton_drop, kernel, interpreted,
                                 lambda: triton_drop.usable(x[::2] if strided else x, None))
    assert chosen == (takes and triton_crc.AVAILABLE)


def test_an_unknown_kernel_is_refused(monkeypatch):
    import torch
    monkeypatch.setattr(triton_drop, "KERNEL", "cuda")
    with pytest.raises(ValueError, match="KERNEL must be one of"):
        triton_drop.usable(torch.zeros(8))


VARIANTS = r"""
import os, sys
os.environ["TRITON_INTERPRET"] = "1"
sys.path.insert(0, BENCHMARKS)
import drop_variants
from thinwire.codecs.kernels import triton_drop
drop_variants.BLOCKS = (64, 128, 256)  # the interpreter's sizes; the library's chunks are 128 and 256 here
triton_drop.BLOCK, triton_drop.TOPK_BLOCK = 128, 256
rows = drop_variants.variants(3_000, lambda fn: (fn(), 1e-3)[1], "cpu")
topk = [r["variant"] for r in rows if r["launch"] == "top-k candidates" and r["density"] == 0.01]
drop = [r["variant"] for r in rows if r["launch"] == "gradient dropping" and r["density"] == 0.01]
assert topk == ["library", "rounds", "bits expanded", "BLOCK = 64", "BLOCK = 128"], topk
assert drop == ["library", "rounds", "bits expanded", "BLOCK = 64", "BLOCK = 256"], drop
assert all(r["equal_to_library"] and r["survivors"] > 0 for r in rows), rows
print("ok")
"""


@pytest.mark.skipif(not triton_crc.AVAILABLE, reason="triton is in requirements.lock; absent only outside make setup")
def test_every_drop_pass_variant_keeps_the_library_s_survivors_under_the_interpreter():
    """``benchmarks/drop_variants.py`` (``gpu_bench``'s part 14): each compaction and chunk size
    keeps the library's survivors, values and residual, top-k's library row in its own chunks."""
    from pathlib import Path
    benchmarks = Path(__file__).resolve().parents[1] / "benchmarks"
    kernel_choice.passes(VARIANTS.replace("BENCHMARKS", repr(str(benchmarks))))
