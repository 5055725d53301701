"""Exact top-k by magnitude without a sort: a sampled threshold, an exact count, a fix-up.

1. Threshold: a strided sample of ``|x|`` (every (n / s)-th entry, s about 16,384) ranks a
   value t that about 1.25 k + 32 entries of the whole tensor reach (the sample's rank
   scaled, with a margin). The sample only sets the work, never the result.
2. Count: one parallel read counts, per chunk, the entries with ``|x| >= t`` (on the bit
   patterns, whose largest also flags NaN and Inf). Fewer than k: t moves down the sample
   (x4 the rank) and the count runs again; past the sample's end t = 0 and every entry is
   a candidate.
3. Gather: each chunk's candidates (index, |x|) go to the chunk's prefix sum, so they come
   out in ascending index order. The read that counts also keeps each chunk's first CAP
   candidates in slots of their own; when every chunk's fit (the threshold's about 1.3%
   of a chunk is far below CAP's 6.25%), they are moved from the slots, and the tensor is
   read once. A chunk with more reads the tensor a second time.
4. Fix-up: the k-th largest candidate magnitude v (a partition of the c candidates, c about
   1.25 k); every candidate above v is kept, and of those equal to v the lowest indices
   (a fixed tie rule, the same on every device: ``torch_select.py`` is this file in torch
   operations).

One read of the tensor (two for a crowded chunk) and O(k) work, against ``torch.topk``'s
selection over all n.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from numba import njit, prange

from . import device
from .bits import trailing_zeros
from .kept import kept

CHUNK = 1 << 16
CAP = CHUNK // 16               # candidate slots per chunk in the one-read scan (about 1.3% are expected)
BLOCK = 64                      # entries whose candidates form one 64-bit mask in the scan
SAMPLE = 1 << 14
ABS = np.uint32(0x7FFFFFFF)     # |x| of a float32 is its bit pattern without the sign bit,
NON_FINITE = 0x7F800000         # and for |x| the integer order is the float order: NaN and
                                # Inf are the patterns from here up


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
def _scan_chunk(bits, t, first, index, magnitude):
    """(count, peak) of ``|x| >= t`` in one chunk, and its first ``index.size`` candidates
    (index, |x|) in index order. Each block of BLOCK entries gives one bit mask of its
    candidates (vectorized compares), whose set bits are walked with ``trailing_zeros``."""
    count, peak, cap = 0, np.uint32(0), index.size
    blocks = bits.size // BLOCK
    for b in range(blocks + 1):
        start = b * BLOCK
        stop = min(bits.size, start + BLOCK)
        mask, top = np.uint64(0), np.uint32(0)
        if stop - start == BLOCK:  # a whole block: a fixed trip count the compiler vectorizes
            for i in range(BLOCK):
                a = bits[start + i] & ABS
                top = max(top, a)
                mask |= np.uint64(a >= t) << np.uint64(i)
        else:
            for i in range(stop - start):
                a = bits[start + i] & ABS
                top = max(top, a)
                mask |= np.uint64(a >= t) << np.uint64(i)
        peak = max(peak, top)
        while mask:
            i = start + np.int64(trailing_zeros(mask))
            if count < cap:
                index[count], magnitude[count] = first + i, bits[i] & ABS
            count += 1
            mask &= mask - np.uint64(1)
    return count, peak


@njit(parallel=True, nogil=True, cache=True)
def _scan(bits, t, counts, peaks, index, magnitude):
    """Step 2 and, where a chunk's candidates fit its CAP slots, step 3 in the same read."""
    n = bits.size
    for c in prange(counts.size):
        counts[c], peaks[c] = _scan_chunk(bits[c * CHUNK:min(n, c * CHUNK + CHUNK)], t, c * CHUNK,
                                          index[c * CAP:(c + 1) * CAP], magnitude[c * CAP:(c + 1) * CAP])


@njit(parallel=True, nogil=True, cache=True)
def _compact(counts, starts, slots_index, slots_magnitude, index, magnitude):
    """Each chunk's candidates from its slots to its prefix sum (all fit their slots)."""
    for c in prange(counts.size):
        index[starts[c]:starts[c] + counts[c]] = slots_index[c * CAP:c * CAP + counts[c]]
        magnitude[starts[c]:starts[c] + counts[c]] = slots_magnitude[c * CAP:c * CAP + counts[c]]


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
    slots_index, slots_magnitude = kept("select.slots", chunks * CAP, (np.int32, np.uint32))
    thresholds = sample(flat)
    rank = threshold_rank(k, bits.size, thresholds.numel())
    while True:
        t = thresholds[rank - 1] if rank <= thresholds.numel() else torch.zeros(())
        t = np.uint32(t.numpy().view(np.uint32))
        _scan(bits, t, counts, peaks, slots_index, slots_magnitude)
        if int(peaks.max()) >= NON_FINITE:
            return torch.empty(0, dtype=torch.int32), True
        total = int(counts.sum())
        if total >= k:
            break
        rank *= 4
    starts = np.zeros(chunks, np.int64)
    np.cumsum(counts[:-1], out=starts[1:])
    index, magnitude = np.empty(total, np.int32), np.empty(total, np.uint32)
    if int(counts.max()) <= CAP:  # every chunk's candidates are in its slots
        _compact(counts, starts, slots_index, slots_magnitude, index, magnitude)
    else:  # a crowded chunk: read the tensor again for every candidate
        _gather(bits, t, starts, index, magnitude)
    v = np.partition(magnitude, total - k)[total - k]
    out = np.empty(k, np.int32)
    _fix_up(index, magnitude, v, int(np.count_nonzero(magnitude > v)), k, out)
    return torch.from_numpy(out), False
