"""1-bit and 2-bit quantization of the values that survive dropping (Aji & Heafield
2017, Sec. 5.4).

Each survivor is sent as a sign bit (1 bit) or a sign bit and a magnitude bit (2 bits),
and is rebuilt as one of a few magnitudes (``levels``), chosen per sign and per group:

- ``threshold`` (Strom 2015): the dropping threshold itself, so every survivor of a
  segment becomes +-threshold. Groups are the threshold's segments.
- ``global`` (global average): the mean |value| of the message's survivors of that sign.
- ``column`` (Dryden et al. 2016): the mean per column of each parameter matrix
  (column j of a (rows, columns) matrix = entries with index % columns == j).

With 2 bits the survivors of each (group, sign) are split at their mean |value| into a
low and a high bin; ``threshold`` rebuilds a bin as its lower edge (the threshold, the
split), the averages as the bin's mean. Levels travel as float32: 2 (1 bit) or 4
(2 bits) per group. The quantization error goes into the residual with the dropped
values, so it is delayed, not lost.
"""

from __future__ import annotations

import torch

LEVELS = ("threshold", "global", "column")


def group_ids(index: torch.Tensor, segments: torch.Tensor, levels: str) -> tuple[torch.Tensor, int]:
    """The group of each survivor and the number of groups.

    ``segments``: int64 (S, 3) rows of (start, numel, columns) covering the message.
    """
    if levels == "global":
        return torch.zeros(index.numel(), dtype=torch.int64), 1
    seg = torch.searchsorted(segments[:, 0].contiguous(), index, right=True) - 1
    if levels == "threshold":
        return seg, segments.shape[0]
    columns = segments[:, 2]
    first = torch.cumsum(columns, 0) - columns
    return first[seg] + (index - segments[seg, 0]) % columns[seg], int(columns.sum())


def quantize(values: torch.Tensor, groups: torch.Tensor, count: int, bits: int, levels: str,
             thresholds: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Survivor values -> (codes uint8, level table float32 (count, 2, 2**(bits-1))).

    ``thresholds``: the threshold of each group (used by ``threshold`` levels).
    """
    negative = values < 0
    magnitude = values.abs().double()
    cell = groups * 2 + negative.long()
    cells = 2 * count
    mean = _mean(magnitude, cell, cells)
    if bits == 1:
        codes = negative.to(torch.uint8)
        table = (thresholds.double()[:, None].expand(count, 2) if levels == "threshold" else mean.view(count, 2))
        return codes, table.reshape(count, 2, 1).float().contiguous()
    high = magnitude > mean[cell]
    codes = negative.to(torch.uint8) | (high.to(torch.uint8) << 1)
    if levels == "threshold":
        low_edge = thresholds.double()[:, None].expand(count, 2).reshape(-1)
        table = torch.stack([low_edge, mean], dim=1)
    else:
        table = _mean(magnitude, cell * 2 + high.long(), cells * 2).view(cells, 2)
    return codes, table.view(count, 2, 2).float().contiguous()


def dequantize(codes: torch.Tensor, groups: torch.Tensor, table: torch.Tensor, bits: int) -> torch.Tensor:
    negative = (codes & 1).long()
    level = (codes >> 1).long() if bits == 2 else torch.zeros_like(negative)
    magnitude = table[groups, negative, level]
    return torch.where(negative.bool(), -magnitude, magnitude)


def _mean(values: torch.Tensor, bins: torch.Tensor, size: int) -> torch.Tensor:
    total = torch.bincount(bins, weights=values, minlength=size)
    count = torch.bincount(bins, minlength=size)
    return total / count.clamp_min(1)
