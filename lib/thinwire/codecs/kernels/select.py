"""Exact top-k by magnitude without a sort: a sampled threshold, an exact count, a fix-up.

1. Threshold: a strided sample of ``|x|`` (every (n / s)-th entry, s about 16,384) ranks a
   value t that about 1.25 k + 32 entries of the whole tensor reach (the sample's rank
   scaled, with a margin). The sample only sets the work, never the result.
2. Count: one parallel read counts, per chunk, the entries with ``|x| >= t`` (on the bit
   patterns, whose largest also flags NaN and Inf). Fewer than k: t moves down the sample
   (x4 the rank) and the count runs again; past the sample's end t = 0 and every entry is
   a candidate.
3. Gather: a second read writes each chunk's candidates (index, |x|) at the chunk's prefix
   sum, so they come out in ascending index order.
4. Fix-up: the k-th largest candidate magnitude v (a partition of the c candidates, c about
   1.25 k); every candidate above v is kept, and of those equal to v the lowest indices
   (a fixed tie rule, the same on every device: ``torch_select.py`` is this file in torch
   operations).

Two reads of the tensor and O(k) work, against ``torch.topk``'s selection over all n.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from numba import njit, prange

from . import device

CHUNK = 1 << 16
SAMPLE = 1 << 14
ABS = np.uint32(0x7FFFFFFF)     # |x| of a float32 is its bit pattern without the sign bit,
NON_FINITE = 0x7F800000         # and for |x| the integer order is the float order: NaN and
                                # Inf are the patterns from here up


@njit(nogil=True, cache=True)
def _count_chunk(bits, t):
    count, peak = 0, np.uint32(0)
    for i in range(bits.size):
        a = bits[i] & ABS
        count += np.int64(a >= t)
        peak = max(peak, a)
    return count, peak


@njit(parallel=True, nogil=True, cache=True)
def _count(bits, t, counts, peaks):
    n = bits.size
    for c in prange(counts.size):
        counts[c], peaks[c] = _count_chunk(bits[c * CHUNK:min(n, c * CHUNK + CHUNK)], t)


@njit(nogil=True, cache=True)
def _gather_chunk(bits, t, first, j, index, magnitude):
    for i in range(bits.size):
        a = bits[i] & ABS
        if a >= t:
            index[j], magnitude[j] = first + i, a
            j += 1


@njit(parallel=True, nogil=True, cache=True)
def _gather(bits, t, starts, index, magnitude):
    n = bits.size
    for c in prange(starts.size):
        _gather_chunk(bits[c * CHUNK:min(n, c * CHUNK + CHUNK)], t, c * CHUNK, starts[c], index, magnitude)


@njit(nogil=True, cache=True)
def _fix_up(index, magnitude, v, above, k, out):
    """The candidates above ``v``, and the first (k - above) equal to it, in index order."""
    ties, j = k - above, 0
    for i in range(index.size):
        m = magnitude[i]
        if m > v or (m == v and ties > 0):
            if m == v:
                ties -= 1
            out[j] = index[i]
            j += 1


def threshold_rank(k: int, n: int, s: int) -> int:
    """The sample rank (0 = largest) whose value about 1.25 k + 32 entries of n reach."""
    return min(s, math.ceil((1.25 * k + 32) * s / n))


def sample(flat: torch.Tensor) -> torch.Tensor:
    """Every (n / s)-th |x|, sorted descending (the thresholds to try)."""
    stride = max(1, flat.numel() // SAMPLE)
    return flat[::stride].abs().sort(descending=True).values


def top_k(flat: torch.Tensor, k: int) -> tuple[torch.Tensor, bool]:
    """(ascending int32 indices of the k largest |x|, ties to the lowest index; whether x
    holds NaN or Inf, in which case the indices are not computed) of a 1-D float32 tensor."""
    if k == 0:  # an empty tensor
        return torch.empty(0, dtype=torch.int32, device=flat.device), False
    if device.on_device(flat):
        from .torch_select import top_k as on_device
        return on_device(flat, k)
    bits = flat.numpy().view(np.uint32)
    chunks = -(-bits.size // CHUNK)
    counts, peaks = np.empty(chunks, np.int64), np.empty(chunks, np.uint32)
    thresholds = sample(flat)
    rank = threshold_rank(k, bits.size, thresholds.numel())
    while True:
        t = thresholds[rank - 1] if rank <= thresholds.numel() else torch.zeros(())
        t = np.uint32(t.numpy().view(np.uint32))
        _count(bits, t, counts, peaks)
        if int(peaks.max()) >= NON_FINITE:
            return torch.empty(0, dtype=torch.int32), True
        total = int(counts.sum())
        if total >= k:
            break
        rank *= 4
    starts = np.zeros(chunks, np.int64)
    np.cumsum(counts[:-1], out=starts[1:])
    index, magnitude = np.empty(total, np.int32), np.empty(total, np.uint32)
    _gather(bits, t, starts, index, magnitude)
    v = np.partition(magnitude, total - k)[total - k]
    out = np.empty(k, np.int32)
    _fix_up(index, magnitude, v, int(np.count_nonzero(magnitude > v)), k, out)
    return torch.from_numpy(out), False
