"""A sparse message written into a dense tensor on a GPU (``kernels/scatter.zeros_with``'s
device path) by torch's fill and index operations and by one Triton kernel
(``kernels/triton_scatter.py``), timed by ``gpu_bench``'s ``scatters`` part:

- ``scatters``: the write alone, ``out = 0; out[index] = values``, at top-k 1%'s density and
  at a tenth of it;
- ``decodes``: top-k's and gradient dropping's whole decode of a message kept on the device.

Each ``triton_scatter.KERNEL`` is timed in turn, round by round in one process (median of
the rounds' best times), and the outputs are compared bit for bit.
"""

from __future__ import annotations

import contextlib
import statistics

import torch

from thinwire.codecs.kernels import triton_scatter

DENSITIES = (0.01, 0.001)
DECODE_SPECS = ("topk(ratio=0.01)", "graddrop(ratio=0.99)")


@contextlib.contextmanager
def _kernel(kernel: str):
    before, triton_scatter.KERNEL = triton_scatter.KERNEL, kernel
    try:
        yield
    finally:
        triton_scatter.KERNEL = before


def _alternated(work, seconds, rounds: int) -> tuple[dict, dict]:
    """({kernel: median of ``rounds`` of ``seconds(work)``}, {kernel: ``work()``'s result})."""
    times, results = {k: [] for k in triton_scatter.KERNELS}, {}
    for _ in range(rounds):
        for kernel in triton_scatter.KERNELS:
            with _kernel(kernel):
                times[kernel].append(seconds(work))
                results[kernel] = work().clone()
    return {k: statistics.median(t) for k, t in times.items()}, results


def _same(results: dict) -> bool:
    first, *rest = results.values()
    return all(torch.equal(first.view(torch.int32), r.view(torch.int32)) for r in rest)


def scatters(n: int, seconds, device: str, rounds: int = 3) -> list[dict]:
    """The write alone over ``n`` values at each of ``DENSITIES``."""
    from thinwire.codecs.kernels import device as paths, scatter
    g = torch.Generator(device).manual_seed(4)
    out = torch.empty(n, device=device)
    rows = []
    for density in DENSITIES:
        k = max(1, round(density * n))
        index = torch.unique(torch.randint(0, n, (k,), device=device, generator=g))  # ascending
        values = torch.randn(index.numel(), device=device, generator=g)
        with paths.forced() if device == "cpu" else contextlib.nullcontext():
            times, results = _alternated(lambda: scatter.zeros_with(out, index, values), seconds, rounds)
        rows.append({"what": "scatter", "values": n, "survivors": index.numel(), "rounds": rounds,
                     **{f"{k}_s": t for k, t in times.items()}, "equal": _same(results)})
    return rows


def decodes(n: int, seconds, device: str, specs=DECODE_SPECS, rounds: int = 3) -> list[dict]:
    """Each of ``specs``' decode of a message of ``n`` normal values kept on the device."""
    from thinwire.codecs import CodecState, make_codec
    from thinwire.codecs.kernels import device as paths
    x = torch.randn(n, device=device, generator=torch.Generator(device).manual_seed(5))
    out = torch.empty_like(x)
    rows = []
    for spec in specs:
        codec = make_codec(spec)
        with paths.forced() if device == "cpu" else contextlib.nullcontext():
            message = codec.encode(x, CodecState(0), "x", out=torch.empty(0, dtype=torch.uint8, device=device))
            times, results = _alternated(lambda: codec.decode(message, CodecState(0), "x", out=out), seconds, rounds)
        rows.append({"what": spec, "values": n, "survivors": int(torch.count_nonzero(results["torch"])),
                     "rounds": rounds, **{f"{k}_s": t for k, t in times.items()}, "equal": _same(results)})
    return rows
