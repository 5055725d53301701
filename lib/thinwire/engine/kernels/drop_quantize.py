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

import numpy as np
import torch
from numba import njit

from . import device

LEVELS = ("threshold", "global", "column")


def group_ids(index: torch.Tensor, segments: torch.Tensor, levels: str) -> tuple[torch.Tensor, int]:
    """The group of each survivor and the number of groups.

    ``segments``: int64 (S, 3) rows of (start, numel, columns) covering the message.
    """
    if not device.on_device(index):  # numpy on the host: one thread, no thread team to wake for O(k) work
        return _group_ids_host(index.numpy(), segments.numpy(), levels)
    if levels == "global":
        return torch.zeros(index.numel(), dtype=torch.int64, device=index.device), 1
    segments = device.put(segments, index.device)
    seg = torch.searchsorted(segments[:, 0].contiguous(), index, right=True) - 1
    if levels == "threshold":
        return seg, segments.shape[0]
    columns = segments[:, 2]
    first = torch.cumsum(columns, 0) - columns
    return first[seg] + (index - segments[seg, 0]) % columns[seg], int(columns.sum())


def _group_ids_host(index: np.ndarray, segments: np.ndarray, levels: str) -> tuple[torch.Tensor, int]:
    """``group_ids`` of host arrays in numpy: the same groups."""
    if levels == "global":
        return torch.from_numpy(np.zeros(index.size, np.int64)), 1
    seg = np.searchsorted(np.ascontiguousarray(segments[:, 0]), index, side="right") - 1
    if levels == "threshold":
        return torch.from_numpy(seg), segments.shape[0]
    columns = segments[:, 2]
    first = np.cumsum(columns) - columns
    return torch.from_numpy(first[seg] + (index - segments[seg, 0]) % columns[seg]), int(columns.sum())


def quantize(values: torch.Tensor, groups: torch.Tensor, count: int, bits: int, levels: str,
             thresholds: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Survivor values -> (codes uint8, level table float32 (count, 2, 2**(bits-1))).

    ``thresholds``: the threshold of each group (used by ``threshold`` levels).
    """
    if device.on_device(values):
        return _quantize_torch(values, groups, count, bits, levels == "threshold", thresholds)
    codes = np.empty(values.numel(), dtype=np.uint8)
    table = np.empty((count, 2, 1 << (bits - 1)), dtype=np.float32)
    _quantize(values.numpy(), groups.numpy(), count, bits, levels == "threshold",
              thresholds.double().numpy(), codes, table)
    return torch.from_numpy(codes), torch.from_numpy(table)


def _quantize_torch(values, groups, count, bits, threshold_levels, thresholds):
    """``_quantize`` in torch operations on the values' device: the same cells, float64
    sums in survivor order (``bincount`` with weights), codes and level table."""
    dev = values.device
    negative = (values < 0).to(torch.int64)
    t = device.put(thresholds, dev, torch.float64).repeat_interleave(2)  # per cell: its group's threshold
    if bits == 1 and threshold_levels:  # every level is a threshold: no means to take
        return negative.to(torch.uint8), t.reshape(count, 2, 1).to(torch.float32)
    cell = groups.to(dev) * 2 + negative
    magnitude = values.abs().to(torch.float64)
    cells = 2 * count
    mean = (torch.bincount(cell, weights=magnitude, minlength=cells)
            / torch.bincount(cell, minlength=cells).clamp_(min=1))
    if bits == 1:
        return negative.to(torch.uint8), mean.reshape(count, 2, 1).to(torch.float32)
    high = (magnitude > mean[cell]).to(torch.int64)
    codes = (negative | (high << 1)).to(torch.uint8)
    fine = cell * 2 + high
    mean2 = (torch.bincount(fine, weights=magnitude, minlength=2 * cells)
             / torch.bincount(fine, minlength=2 * cells).clamp_(min=1)).reshape(cells, 2)
    table = torch.stack([t, mean], 1) if threshold_levels else mean2
    return codes, table.reshape(count, 2, 2).to(torch.float32)


def signs(values: torch.Tensor, threshold: float, count: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """1 bit with ``threshold`` levels and one threshold for every group (``scope="global"``):
    (codes, level table, the values rebuilt) as ``quantize`` and ``dequantize`` make them,
    without the groups, since every level is ``threshold``: each code is its survivor's
    sign, each rebuilt value +-threshold: a few operations on the values' device instead of
    the groups' and the table's twenty; on the host they are numpy's, on one thread."""
    level = float(np.float32(threshold))
    if not device.on_device(values):
        negative = values.numpy() < 0
        rebuilt = np.where(negative, np.float32(-level), np.float32(level))
        return (torch.from_numpy(negative.view(np.uint8)), torch.full((count, 2, 1), level, dtype=torch.float32),
                torch.from_numpy(rebuilt))
    negative = values < 0
    rebuilt = torch.where(negative, -level, level).to(torch.float32)  # a no-op unless the default dtype is another
    return negative.to(torch.uint8), torch.full((count, 2, 1), level, dtype=torch.float32), rebuilt


def dequantize(codes: torch.Tensor, groups: torch.Tensor, table: torch.Tensor, bits: int) -> torch.Tensor:
    """Each survivor's level, signed: ``table[group, negative, level]`` (on the codes' device
    in torch operations, ``device.py``)."""
    if device.on_device(codes):
        negative = (codes & 1).to(torch.int64)
        level = (codes >> 1).to(torch.int64) if bits == 2 else 0
        magnitude = device.put(table, codes.device)[device.put(groups, codes.device), negative, level]
        return torch.where(negative.bool(), -magnitude, magnitude)
    out = np.empty(codes.numel(), dtype=np.float32)
    _dequantize(codes.numpy(), groups.numpy(), table.contiguous().numpy(), bits, out)
    return torch.from_numpy(out)


def keep_error(residual: torch.Tensor, index: torch.Tensor, values: torch.Tensor, sent: torch.Tensor) -> None:
    """residual[index] = values - sent: the quantization error stays in the residual (on
    its device, where the survivors are too)."""
    if device.on_device(residual):
        residual[index.to(residual.device)] = (values - sent).to(residual.device)
        return
    _keep_error(residual.numpy(), index.numpy(), values.numpy(), sent.numpy())


# Serial compiled loops: the survivors are ~1% of a tensor, too few for threads to pay
# (a dozen short multi-threaded operations here ran 10x slower on a busy machine).
# Sums run in survivor order in float64, as ``torch.bincount`` with weights does.
@njit(nogil=True, cache=True)
def _quantize(values, groups, count, bits, threshold_levels, thresholds, codes, table):
    cells = 2 * count
    total = np.zeros(cells, np.float64)
    number = np.zeros(cells, np.int64)
    for i in range(values.size):
        cell = groups[i] * 2 + (1 if values[i] < 0 else 0)
        total[cell] += abs(np.float64(values[i]))
        number[cell] += 1
    mean = total / np.maximum(number, 1)
    if bits == 1:
        for i in range(values.size):
            codes[i] = 1 if values[i] < 0 else 0
        for g in range(count):
            for sign in range(2):
                table[g, sign, 0] = thresholds[g] if threshold_levels else mean[2 * g + sign]
        return
    total2 = np.zeros(2 * cells, np.float64)
    number2 = np.zeros(2 * cells, np.int64)
    for i in range(values.size):
        negative = 1 if values[i] < 0 else 0
        cell = groups[i] * 2 + negative
        magnitude = abs(np.float64(values[i]))
        high = 1 if magnitude > mean[cell] else 0
        codes[i] = negative | (high << 1)
        total2[cell * 2 + high] += magnitude
        number2[cell * 2 + high] += 1
    mean2 = total2 / np.maximum(number2, 1)
    for g in range(count):
        for sign in range(2):
            cell = 2 * g + sign
            if threshold_levels:
                table[g, sign, 0] = thresholds[g]
                table[g, sign, 1] = mean[cell]
            else:
                table[g, sign, 0] = mean2[2 * cell]
                table[g, sign, 1] = mean2[2 * cell + 1]


@njit(nogil=True, cache=True)
def _dequantize(codes, groups, table, bits, out):
    for i in range(codes.size):
        negative = np.int64(codes[i] & 1)
        level = np.int64(codes[i] >> 1) if bits == 2 else np.int64(0)
        magnitude = table[groups[i], negative, level]
        out[i] = -magnitude if negative else magnitude


@njit(nogil=True, cache=True)
def _keep_error(residual, index, values, sent):
    for i in range(index.size):
        residual[index[i]] = values[i] - sent[i]
