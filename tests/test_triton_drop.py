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
from thinwire.codecs.sparsify import drop_survivors
from thinwire.codecs.sparsify.drop_pass import drop_pass
from thinwire.codecs.sparsify.offsets import index_gaps, long_gaps
drop_survivors.SLACK = 0  # the buffers' room as the density gives it
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
    for kernel in ("host", "torch", "triton"):
        residual = x.clone()
        triton_drop.KERNEL = "triton" if kernel == "triton" else "torch"
        with device.forced() if kernel != "host" else torch.no_grad():
            index, values = drop_pass(residual, g, segments, keep, inclusive, source=s)
        results.append((index, values.view(torch.int32), residual.view(torch.int32)))
    for kernel, got in zip(("torch", "triton"), results[1:]):
        for name, a, b in zip(("index", "values", "residual"), got, results[0]):
            assert torch.equal(a, b), (kernel, name, n, segments, keep, inclusive, with_gradient, with_source)
    # what gradient dropping's encoder reads of the pass (``drop_survivors``), the thresholds
    # given on the device, unread, with a row beside them; the Triton pass's buffers with
    # room for every survivor (density 1), then for one (the rest compacted after the read);
    # at two sizes, one chunk and several
    if n not in (63, 300):
        return
    index, values = results[0][0], results[0][1].view(torch.float32)
    spans = [(a, b) for a, b, _ in segments]
    found = torch.tensor([[t for *_, t in segments], [7.0 + i for i in range(len(segments))]], dtype=torch.float64)
    gap = index_gaps(index)
    for kernel, density in (("host", 1.0), ("torch", 1.0), ("triton", 1.0), ("triton", 1e-9)):
        residual = x.clone()
        triton_drop.KERNEL = "triton" if kernel == "triton" else "torch"
        with device.forced() if kernel != "host" else torch.no_grad():
            kept = drop_survivors.survivors(residual, g, spans, found, keep, inclusive, density, s, gaps=True)
        case = (kernel, density, n, segments, keep, inclusive, with_gradient, with_source)
        assert torch.equal(kept.index, index) and torch.equal(kept.values.view(torch.int32), results[0][1]), case
        assert torch.equal(residual.view(torch.int32), results[0][2]), case
        assert [kept.thresholds, kept.equal] == found.tolist(), case
        assert kept.finite == bool(torch.isfinite(values).all()), case
        assert kept.counts == [int(((index >= a) & (index < b)).sum()) for a, b in spans], case
        if kernel == "host":
            assert kept.gap is None and kept.longs is None, case
        else:
            assert torch.equal(kept.gap, gap) and kept.longs == tuple(long_gaps(gap).tolist()), case


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
real = triton_drop.counted
triton_drop.counted = lambda *a, **k: calls.append(1) or real(*a, **k)
for spec in ["graddrop(ratio=0.9)", "graddrop(ratio=0.99, bits=1)", "graddrop(ratio=0.9, scope='local', ties='keep')",
             "graddrop(ratio=0.9, scope='local')"]:
    # ones: every span's largest ties, so none keeps a value (``_unstall``)
    for tensor in (x, torch.ones(30, 101)) if spec in ("graddrop(ratio=0.9)", "graddrop(ratio=0.9, scope='local')") else (x,):
        host_state, device_state = CodecState(3), CodecState(3)
        codec = make_codec(spec)
        for step in (1.0, 0.5):
            host = codec.encode(tensor * step, host_state, "w")
            calls.clear()
            with device.forced():
                moved = codec.encode(tensor * step, device_state, "w")
            assert calls and bytes(moved) == bytes(host), (spec, step)
            assert device_state.last.kept == host_state.last.kept and device_state.last.tied == host_state.last.tied
        assert device_state.scratch["graddrop.draws_ahead"].taken == 1, spec  # step 2's sample, drawn during step 1
# top-k's candidates by the same kernels: the host's messages; NaN and Inf anywhere refused
counted, chunked = [], []
real_chunks = triton_drop._chunks
triton_drop._chunks = lambda spans, where, block: chunked.append(block) or real_chunks(spans, where, block)
real_at_least = triton_drop.at_least
triton_drop.at_least = lambda *a, **k: counted.append(1) or real_at_least(*a, **k)
g = torch.Generator().manual_seed(2)
tensors = [torch.randn(5_008, generator=g), torch.randint(-3, 4, (5_000,), generator=g).float(),  # ties
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


def test_runs_promise_16_value_boundaries_only_where_every_chunk_has_them():
    """``triton_drop.runs`` tells ``_count`` which chunks start and stop at multiples of 16
    values (``ALIGNED``): a wrong promise would read four values from an address that is not
    16-byte aligned on a GPU. The runs cover the chunks in order, alternate, and leave a
    tensor of any size in one span one aligned run, and its last chunk apart."""
    import numpy as np
    rng = np.random.default_rng(3)
    seen = set()
    for _ in range(400):
        cuts = np.sort(rng.choice([0, 16, 32, 48, 64, 100, 128, 2048, 4096, 4100, 6144], size=rng.integers(1, 5)))
        cuts = [int(c) + int(rng.integers(0, 2)) * int(rng.choice([1, 8, 15])) * int(rng.random() < 0.3) for c in cuts]
        spans = tuple((a, max(a, b)) for a, b in zip([0] + cuts[:-1], cuts))
        for block in (64, 2048, 4096, 100):
            starts, stops, _ = triton_drop._chunks(spans, "cpu", block)
            found = triton_drop.runs(spans, block)
            assert [a for a, *_ in found] + [found[-1][1] if found else 0] == [0] + [b for _, b, _ in found] \
                and (found[-1][1] if found else 0) == starts.numel(), (spans, block, found)  # in order, all
            for a, b, aligned in found:
                every = bool(((starts[a:b] % 16 == 0) & (stops[a:b] % 16 == 0)).all())
                assert every or not aligned, (spans, block, found)  # never a wrong promise
                seen.add(aligned)
            flags = [bool(a % 16 == 0 and b % 16 == 0) for a, b in zip(starts.tolist(), stops.tolist())]
            maximal = []  # the runs of equal flags, as few as can be
            for i, flag in enumerate(flags):
                if maximal and maximal[-1][2] == flag:
                    maximal[-1][1] = i + 1
                else:
                    maximal.append([i, i + 1, flag])
            assert list(found) == ([tuple(r) for r in maximal] if len(maximal) <= triton_drop.RUNS
                                   else [(0, len(flags), False)]), (spans, block, found)  # every true promise made
    assert seen == {True, False}
    for n in (16, 4096, 4100, 250_000_010):
        assert triton_drop.runs(((0, n),), 2048)[0][2], n  # every chunk but the last in one aligned run
        assert len(triton_drop.runs(((0, n),), 2048)) == 1 + (n % 16 > 0), n


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
rows = drop_variants.variants(3_008, lambda fn: (fn(), 1e-3)[1], "cpu")  # a multiple of 16: the library's count
# reads 16 bytes at a time (``ALIGNED``), the variant one value at a time
topk = [r["variant"] for r in rows if r["launch"] == "top-k candidates" and r["density"] == 0.01]
drop = [r["variant"] for r in rows if r["launch"] == "gradient dropping" and r["density"] == 0.01]
warps = ["count, 4 warps", "count, 16 warps"]
narrow = ["count, 4-byte accesses"]
assert topk == ["library", "rounds", "bits expanded"] + narrow + ["BLOCK = 64", "BLOCK = 128"] + warps, topk
assert drop == ["library", "rounds", "bits expanded"] + narrow + ["BLOCK = 64", "BLOCK = 256"] + warps, drop
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
