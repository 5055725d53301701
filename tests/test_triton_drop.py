"""The Triton drop pass (``kernels/triton_drop.py``) keeps the survivors and writes the
residual of the host kernels and of the torch operations, and selects top-k's candidates, run on the CPU by Triton's
interpreter (``TRITON_INTERPRET=1``, set before triton is imported, so in a process of its
own)."""

import kernel_choice
import pytest

from thinwire.engine.kernels import triton_crc, triton_drop

CHECK = r"""
import os
os.environ["TRITON_INTERPRET"] = "1"
import numpy as np, torch
from thinwire.codecs import CodecState, make_codec
from thinwire.engine.kernels import device, triton_drop
import drop_cases
assert triton_drop.BLOCK == 64 and triton_drop.TOPK_BLOCK == 128  # the interpreter's programs: several per segment
# every compaction by rounds and every one dense, among the cases
assert drop_cases.every_case() == {"_compact", "_compact_dense"}
# through the codec, two steps (the residual carries over; the second's gradient added in the
# drop pass, its sample drawn ahead): the host's messages
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


def test_torch_s_drop_pass_keeps_what_the_host_keeps():
    """Where Triton does not run (here: kernels not interpreted), a device takes torch's
    operations: the same survivors, values and residual."""
    import drop_cases
    import torch
    assert not triton_drop.usable(torch.zeros(4))
    drop_cases.every_case()


@pytest.mark.parametrize("interpreted, dtype, strided, takes", kernel_choice.FLOAT32_CASES)
def test_the_kernel_takes_only_what_it_can(monkeypatch, interpreted, dtype, strided, takes):
    import torch
    x = torch.zeros(16, dtype=getattr(torch, dtype))
    chosen = kernel_choice.takes(monkeypatch, interpreted, lambda: triton_drop.usable(x[::2] if strided else x, None))
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
