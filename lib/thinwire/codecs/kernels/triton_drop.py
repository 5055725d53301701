"""Aji & Heafield's drop pass (Alg. 1 lines 5-8: add the gradient to the residual, keep the
values above the threshold, zero them in the residual) over a GPU tensor in two Triton
kernels, with the survivors compacted in index order: the survivors and residual of
``sparsify/drop_pass.py``'s torch operations, which make a magnitude tensor, a mask and a
``torch.nonzero`` per segment, each waiting for the device.

Opt-in (``KERNEL = "triton"``; ``"torch"`` is the default): ``gpu_bench``'s
``codec_kernels`` part timed both on an H100 with equal messages, and gradient dropping
was slower with these kernels (0.99: 0.04-0.05 of the add pass at 25M values against
0.06, 0.12-0.13 at 250M against 0.14), top-k 1% faster only at 250M (0.29-0.32 against
0.14). On the CPU the test suite runs these kernels under Triton's interpreter against
the host kernels.

Each segment (start, stop, threshold) is cut into chunks of ``BLOCK`` values, one program
each:

1. ``_count``: each chunk's survivors, ``not |x| <= t`` (``not |x| < t`` for kept ties
   above 0), so NaN and Inf always survive, as in ``drop_pass``, with x the corrected value
   (source + gradient, in float32);
2. the chunks' counts summed in order (``torch.cumsum``): where each chunk's survivors go,
   and how many there are (the one wait for the device, to size the message);
3. ``_compact``: each chunk's survivors (index, corrected value) written from its offset in
   index order (a prefix sum within the chunk), and zeroed in the residual.

With a gradient, ``_count`` also writes the corrected values into the residual, and
``_compact`` reads them from there: the residual and the gradient are read once, the
residual written once and read again, 16 bytes per value (``benchmarks/device_audit.py``
counts them), where the torch operations read and write it about six times.

Top-k's candidates (``|x| >= t``, with NaN and Inf counted on the way: ``at_least``) are
the same two kernels with no gradient and no residual (``torch_select.py``).
"""

from __future__ import annotations

import functools
from typing import Callable

import numpy as np
import torch

from . import triton_crc
from .triton_crc import AVAILABLE

KERNEL = "torch"        # "torch" (drop_pass's torch operations) or "triton" (these kernels)
KERNELS = ("torch", "triton")
BLOCK = 2048            # values per program
WARPS = 8               # compiled for sm_90, the compacting kernel holds 80 registers (kernel_registers.py)


def usable(*tensors: torch.Tensor | None) -> bool:
    """Whether these kernels take the work: chosen (``KERNEL``), Triton present, and every
    tensor contiguous float32 on one GPU (or on the CPU under ``TRITON_INTERPRET=1``)."""
    if KERNEL not in KERNELS:
        raise ValueError(f"triton_drop.KERNEL must be one of {KERNELS}, got {KERNEL!r}")
    present = [t for t in tensors if t is not None]
    return (KERNEL == "triton" and all(t.dtype == torch.float32 for t in present)
            and triton_crc.triton_runs(*present))


if AVAILABLE:
    import triton
    import triton.language as tl

    @triton.jit
    def _corrected(src, grad, starts, stops, segment, thresholds, ADD: tl.constexpr, INCLUSIVE: tl.constexpr,
                   BLOCK: tl.constexpr, AT_LEAST: tl.constexpr = False):
        """(positions, in the tensor, corrected values, survivors) of this program's chunk, of
        segment ``segment[p]``. ``AT_LEAST``: every value with ``not |x| < t`` survives
        (top-k's candidates)."""
        p = tl.program_id(0)
        start, stop = tl.load(starts + p), tl.load(stops + p)
        t = tl.load(thresholds + tl.load(segment + p))
        at = start + tl.arange(0, BLOCK)
        inside = at < stop
        x = tl.load(src + at, mask=inside, other=0.0)
        if ADD:
            x = x + tl.load(grad + at, mask=inside, other=0.0)
        if AT_LEAST:
            small = tl.abs(x) < t
        elif INCLUSIVE:  # ties kept where t > 0
            small = tl.where(t > 0, tl.abs(x) < t, tl.abs(x) <= t)
        else:
            small = tl.abs(x) <= t
        return at, x, inside & ~small

    @triton.jit
    def _count(src, grad, starts, stops, segment, thresholds, counts, non_finite, residual, ADD: tl.constexpr,
               INCLUSIVE: tl.constexpr, BLOCK: tl.constexpr, AT_LEAST: tl.constexpr = False, FLAG: tl.constexpr = False,
               STORE: tl.constexpr = False):
        """Each chunk's survivors; with ``FLAG`` also its NaN and Inf, into ``non_finite``;
        with ``STORE`` the corrected values written into ``residual``."""
        at, x, keep = _corrected(src, grad, starts, stops, segment, thresholds, ADD, INCLUSIVE, BLOCK, AT_LEAST)
        tl.store(counts + tl.program_id(0), tl.sum(keep.to(tl.int32), axis=0))
        if STORE:
            tl.store(residual + at, x, mask=at < tl.load(stops + tl.program_id(0)))
        if FLAG:
            bad = (at < tl.load(stops + tl.program_id(0))) & ~(tl.abs(x) <= 3.4028234663852886e38)
            tl.store(non_finite + tl.program_id(0), tl.sum(bad.to(tl.int32), axis=0))

    @triton.jit
    def _compact(src, grad, starts, stops, segment, thresholds, ends, index, values, residual, ADD: tl.constexpr,
                 INCLUSIVE: tl.constexpr, ZERO: tl.constexpr, BLOCK: tl.constexpr, AT_LEAST: tl.constexpr = False):
        """Each chunk's survivors written from its offset; with ``ZERO`` zeroed in ``residual``
        (which holds the corrected values already)."""
        at, x, keep = _corrected(src, grad, starts, stops, segment, thresholds, ADD, INCLUSIVE, BLOCK, AT_LEAST)
        taken = keep.to(tl.int32)
        to = tl.load(ends + tl.program_id(0)) - tl.sum(taken, axis=0) + tl.cumsum(taken, axis=0) - 1
        tl.store(index + to, at, mask=keep)
        tl.store(values + to, x, mask=keep)
        if ZERO:
            tl.store(residual + at, tl.zeros_like(x), mask=keep)


@functools.lru_cache(maxsize=64)
def _chunks(spans: tuple[tuple[int, int], ...], device: str, block: int) -> tuple[torch.Tensor, ...]:
    """(starts, stops, span) of every chunk of the spans, on ``device`` (kept: a tensor's
    spans are the same every step)."""
    per = np.array([-(-(b - a) // block) if b > a else 0 for a, b in spans], np.int64)
    starts = np.concatenate([a + block * np.arange(k, dtype=np.int64) for (a, _), k in zip(spans, per)]) \
        if per.sum() else np.zeros(0, np.int64)
    stops = np.minimum(starts + block, np.repeat([b for _, b in spans], per))
    span = np.repeat(np.arange(len(spans), dtype=np.int32), per)
    return tuple(torch.from_numpy(a).to(device) for a in (starts, stops, span))


def drop(residual: torch.Tensor, gradient: torch.Tensor | None, segments: list[tuple[int, int, float]],
         keep_residual: bool, inclusive: bool, source: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
    """``drop_pass``'s (survivor indices int64, corrected values float32) on the tensors'
    device, ``residual`` written as ``drop_pass`` writes it (``usable`` must hold)."""
    device = residual.device
    starts, stops, span = _chunks(tuple((int(a), int(b)) for a, b, _ in segments), str(device), BLOCK)
    jobs = starts.numel()
    if not jobs:
        return torch.zeros(0, dtype=torch.int64, device=device), torch.zeros(0, dtype=torch.float32, device=device)
    thresholds = torch.tensor([t for *_, t in segments], dtype=torch.float32).to(device)
    src = residual if source is None or gradient is None else source
    grad = gradient if gradient is not None else src
    counts = torch.empty(jobs, dtype=torch.int32, device=device)
    flags = dict(INCLUSIVE=inclusive, BLOCK=BLOCK, num_warps=WARPS)
    # with a gradient, the corrected values go into the residual as they are counted, and
    # are compacted from there; without one the residual is the values already
    _count[(jobs,)](src, grad, starts, stops, span, thresholds, counts, counts, residual, ADD=gradient is not None,
                    STORE=gradient is not None, **flags)
    ends = torch.cumsum(counts, 0)
    total = int(ends[-1].item())
    index = torch.empty(total, dtype=torch.int64, device=device)
    values = torch.empty(total, dtype=torch.float32, device=device)
    _compact[(jobs,)](residual, residual, starts, stops, span, thresholds, ends, index, values, residual, ADD=False,
                      ZERO=keep_residual, **flags)
    return index, values


def at_least(flat: torch.Tensor, t: torch.Tensor) -> tuple[int, bool, Callable[[], tuple[torch.Tensor, torch.Tensor]]]:
    """Top-k's candidates (``select.py``), ``|x| >= t`` for the one-element float32 tensor
    ``t`` on ``flat``'s device: (how many, whether ``flat`` holds NaN or Inf, read together
    in one wait for the device, and a function that compacts them into (ascending int64
    indices, their values)). ``usable(flat)`` must hold."""
    device = flat.device
    starts, stops, span = _chunks(((0, flat.numel()),), str(device), BLOCK)
    jobs = starts.numel()
    thresholds = t.reshape(1).to(torch.float32).contiguous()
    counts = torch.empty(2 * jobs, dtype=torch.int32, device=device)
    flags = dict(ADD=False, INCLUSIVE=False, BLOCK=BLOCK, AT_LEAST=True, num_warps=WARPS)
    _count[(jobs,)](flat, flat, starts, stops, span, thresholds, counts, counts[jobs:], flat, FLAG=True, **flags)
    ends = torch.cumsum(counts[:jobs], 0)
    total, bad = torch.stack([ends[-1], counts[jobs:].sum()]).tolist()

    def compact() -> tuple[torch.Tensor, torch.Tensor]:
        index = torch.empty(total, dtype=torch.int64, device=device)
        values = torch.empty(total, dtype=torch.float32, device=device)
        _compact[(jobs,)](flat, flat, starts, stops, span, thresholds, ends, index, values, flat, ZERO=False,
                          **flags)
        return index, values
    return int(total), bool(bad), compact
