"""Gradient dropping's survivors, and what its encoder reads of them, in one wait for a
device (Aji & Heafield 2017, Alg. 1 lines 3-6; ``graddrop.py``'s steps 2, 3 and 6).

Before it writes a message the encoder needs on the host: how many values survive (the
message's size), each span's threshold and how many sampled values equal it (the
statistics, 1-bit levels), whether every survivor is finite (NaN and Inf always survive
and refuse the message), each span's survivors (a span whose strict test kept none sends
its ties: ``graddrop._unstall``) and, for the offsets encoding, how many gaps are long
(its width and escapes: ``offsets.long_gaps``).

With the Triton drop kernels (``triton_drop.py``, ``counted``) all of it is read
in one copy: the thresholds stay on the device where they were found, NaN and Inf are
counted with the survivors, each span's survivors are its chunks' counts, and the
survivors are compacted before the read into buffers with room for the expected number
and ``DEVIATIONS`` standard deviations more (``capacity``), whose gaps are counted on the
device (past the last survivor the indices are 0, so no gap there is long). More
survivors than the buffers hold are compacted after the read, and their long gaps read in
a second wait. Elsewhere (the host's kernels; torch's operations on a device) the pass
runs first (``drop_pass``) and the rest is read after it, in one copy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from . import device, triton_drop
from .drop_pass import drop_pass
from .offsets import index_gaps, long_gaps

DEVIATIONS = 4    # the survivors' buffers: room for this many standard deviations above the expected number
SLACK = 1024      # ... and this many more


@dataclass
class Survivors:
    index: torch.Tensor            # int64, ascending, on the values' device
    values: torch.Tensor           # their corrected values, float32
    thresholds: list[float]        # one per span
    equal: list[float]             # how many of the values each threshold was chosen from equal it
    finite: bool                   # whether every survivor is finite
    counts: list[int]              # survivors per span
    gap: torch.Tensor | None       # the indices' gaps (``offsets.index_gaps``), where asked for on a device
    longs: tuple[int, int] | None  # their ``long_gaps``, with ``gap``


def sum_bits(values: torch.Tensor) -> torch.Tensor:
    """The bits of the float64 sum of float32 ``values`` (a one-element int64 tensor on their
    device): one reduction, read with the other int64 values the encoder reads, where
    ``isfinite(values).all()`` is five operations on a GPU. The sum is finite exactly when
    every value is: float32 values, however many a message holds, cannot overflow a float64
    sum (2^31 of float32's largest is about 7e47), and NaN or Inf makes the sum NaN or Inf."""
    return values.sum(dtype=torch.float64).reshape(1).view(torch.int64)


def finite(bits) -> bool:
    """Whether the float64 whose bits ``bits`` (an int, or ``sum_bits``) holds is finite: its
    exponent is not all ones."""
    return (int(bits) >> 52) & 0x7FF != 0x7FF


def capacity(spans: list[tuple[int, int]], density: float, chosen_from: list[int], slack: int = SLACK) -> int:
    """Room for the survivors of thresholds chosen as order statistics of ``chosen_from``
    values, one per span, at ``density``: each span's expected number, d (b - a), and
    ``DEVIATIONS`` standard deviations more. The share of a span above the order statistic
    with q = d (m + 1) of m values above it is Beta distributed, its relative standard
    deviation about 1 / sqrt(q) (Sec. 4's 0.1% sample of 250M values: 2%; 1,000 values at
    99%: 32%). ``slack``: that many more (``SLACK``)."""
    room = sum(density * (b - a) * (1 + DEVIATIONS / math.sqrt(max(density * (m + 1), 1)))
               for (a, b), m in zip(spans, chosen_from))
    return min(sum(b - a for a, b in spans), math.ceil(room) + slack)


def survivors(residual: torch.Tensor, gradient: torch.Tensor | None, spans: list[tuple[int, int]],
              found: torch.Tensor, keep_residual: bool, inclusive: bool, density: float,
              source: torch.Tensor | None, meanwhile=None, gaps: bool = False,
              chosen_from: list[int] | None = None, slack: int = SLACK) -> Survivors:
    """``drop_pass`` over ``spans`` with the thresholds in ``found``'s first row (float64,
    one column per span, on ``residual``'s device, not read; its second row: how many
    values equal each) and ``Survivors`` read of it; ``gaps``: count the long gaps of the
    offsets encoding too (on a device); ``chosen_from``: how many values each threshold
    was chosen from (``capacity``; None: each span's). The other arguments are
    ``drop_pass``'s."""
    if device.on_device(residual) and triton_drop.usable(residual, gradient, source):
        room = capacity(spans, density, chosen_from or [b - a for a, b in spans], slack)
        return _in_one_wait(residual, gradient, spans, found, keep_residual, inclusive, room, source, meanwhile, gaps)
    thresholds, equal = found.tolist()  # (a wait on a device)
    on_host = not device.on_device(residual)  # the host's pass counts NaN and Inf as it gathers
    passed = drop_pass(residual, gradient, [(a, b, t) for (a, b), t in zip(spans, thresholds)],
                       keep_residual, inclusive, density, source, meanwhile, counted=on_host)
    index, values = passed[:2]
    gap = index_gaps(index) if gaps and not on_host else None
    read = ([] if on_host else [sum_bits(values)]) + ([long_gaps(gap)] if gap is not None else [])
    k = 2 * len(spans) if len(spans) > 1 else 0
    if k:  # where each span's survivors start and end
        read.insert(0, torch.searchsorted(index, device.put(torch.tensor(spans).reshape(-1), index.device)))
    got = torch.cat(read).tolist() if read else []
    counts = [b - a for a, b in zip(got[0:k:2], got[1:k:2])] if k else [index.numel()]
    return Survivors(index, values, thresholds, equal, passed[2] == 0 if on_host else finite(got[k]), counts, gap,
                     tuple(got[k + 1:]) if gap is not None else None)


def _in_one_wait(residual, gradient, spans, found, keep_residual, inclusive, room, source, meanwhile, gaps):
    spans = tuple((int(a), int(b)) for a, b in spans)
    pass_ = triton_drop.counted(residual, gradient, spans, found[0], keep_residual, inclusive, source, room)
    gap = index_gaps(pass_.index) if gaps else None
    read = [pass_.ends[-1:], pass_.non_finite.sum().reshape(1)] + ([long_gaps(gap)] if gap is not None else [])
    if len(spans) > 1:
        read.append(pass_.through_spans())
    read.append(found.reshape(-1).view(torch.int64))
    if meanwhile is not None:
        meanwhile()
    got = torch.cat(read).cpu()  # the one wait
    total, bad, k = int(got[0]), int(got[1]), len(spans)
    longs = tuple(got[2:4].tolist()) if gap is not None else None
    through = got[-3 * k:-2 * k].tolist() if k > 1 else [total]
    thresholds, equal = got[-2 * k:].view(torch.float64).view(2, k).tolist()
    index, values = pass_.survivors(total)
    if gap is not None:
        if total <= pass_.capacity:
            gap = gap[:total]
        else:  # compacted after the read: their gaps counted now
            gap = index_gaps(index)
            longs = tuple(long_gaps(gap).tolist())
    counts = [b - a for a, b in zip([0] + through[:-1], through)]  # from the survivors up to each span's end
    return Survivors(index, values, thresholds, equal, bad == 0, counts, gap, longs)
