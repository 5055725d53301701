"""Exact top-k by magnitude without a sort: a sampled threshold, an exact count, a fix-up.

1. Threshold: a strided sample of ``|x|`` (every (n / s)-th entry, s about 16,384) ranks a
   value t that about 1.25 k + 32 entries of the whole tensor reach (the sample's rank
   scaled, with a margin, found by ``_kth_magnitude``). The sample only sets the work,
   never the result.
2. Count: one parallel read counts, per chunk, the entries with ``|x| >= t`` (on the bit
   patterns, whose largest also flags NaN and Inf). Fewer than k: t moves down the sample
   (x4 the rank) and the count runs again; past the sample's end t = 0 and every entry is
   a candidate.
3. Gather: the read that counts also keeps each chunk's first CAP candidates (index, bit
   pattern of the value) in slots of their own, in index order; when every chunk's fit (the
   threshold's about 1.3% of a chunk is far below CAP's 6.25%), steps 4 and 5 read them
   there, chunk by chunk, and the tensor is read once. A chunk with more: every chunk's
   candidates are gathered again, to their prefix sums, by a second parallel read.
4. The k-th largest candidate magnitude v, by a radix select over the c candidates (c
   about 1.25 k), with how many are above it.
5. Fix-up: every candidate above v is kept, and of those equal to v the lowest indices (a
   fixed tie rule, the same on every device: ``torch_select.py`` is this file in torch
   operations), each with its value from the slots: the message's values are not read
   from the tensor again.

One read of the tensor (two for a crowded chunk) and O(k) work, against ``torch.topk``'s
selection over all n. Only the reads of the tensor run on every thread; the O(k) steps run
on the calling thread, so a round trip (``topk.py``) has two parallel regions, this count's
read and the decode's scatter: on a machine whose cores other processes keep busy, each
region waits for its threads to be scheduled.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from numba import njit, prange

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
def _gather_chunk(bits, t, first, j, index, found):
    for i in range(bits.size):
        if bits[i] & ABS >= t:
            index[j], found[j] = first + i, bits[i]
            j += 1


@njit(parallel=True, nogil=True, cache=True)
def _gather(bits, t, starts, index, found):
    n = bits.size
    for c in prange(starts.size):
        _gather_chunk(bits[c * CHUNK:min(n, c * CHUNK + CHUNK)], t, c * CHUNK, starts[c], index, found)


@njit(nogil=True, cache=True)
def _scan_chunk(bits, t, first, index, found):
    """(count, peak) of ``|x| >= t`` in one chunk, and its first ``index.size`` candidates
    (index, bit pattern of x) in index order. Each block of BLOCK entries gives one bit mask of its
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
                index[count], found[count] = first + i, bits[i]
            count += 1
            mask &= mask - np.uint64(1)
    return count, peak


@njit(parallel=True, nogil=True, cache=True)
def _scan(bits, t, counts, peaks, index, found):
    """Step 2 and, where a chunk's candidates fit its CAP slots, step 3 in the same read."""
    n = bits.size
    for c in prange(counts.size):
        counts[c], peaks[c] = _scan_chunk(bits[c * CHUNK:min(n, c * CHUNK + CHUNK)], t, c * CHUNK,
                                          index[c * CAP:(c + 1) * CAP], found[c * CAP:(c + 1) * CAP])


@njit(nogil=True, cache=True)
def _sample(bits, stride):
    """|x| (bit patterns) of every ``stride``-th entry: step 1's sample."""
    out = np.empty(-(-bits.size // stride), np.uint32)
    for j in range(out.size):
        out[j] = bits[j * stride] & ABS
    return out


@njit(nogil=True, cache=True)
def _digit(counts, rank):
    """(the digit, from the largest down, whose bucket holds the rank-th largest (1-based);
    how many are in the buckets above it)."""
    above, d = 0, counts.size - 1
    while above + counts[d] < rank:
        above += counts[d]
        d -= 1
    return d, above


@njit(nogil=True, cache=True)
def _kth_magnitude(found, firsts, sizes, rank):
    """(the rank-th largest (1-based) |x| bit pattern among ``found[firsts[c]:firsts[c] +
    sizes[c]]`` over every c, how many are larger): a radix select, 11, 11 and 10 bits at a
    time from the highest; a finite |x|'s pattern orders as its value. The first pass
    counts every entry and copies the patterns to one run, the second counts those of the
    chosen bucket and moves them to the front, the third reads only them. Each pass counts
    into four histograms in turn: neighbouring candidates often share a bucket, and one
    counter's increments would wait for each other."""
    total = 0
    for c in range(firsts.size):
        total += sizes[c]
    run = np.empty(total, np.uint32)
    h = np.zeros((4, 2048), np.int64)
    j = 0
    for c in range(firsts.size):
        for i in range(firsts[c], firsts[c] + sizes[c]):
            m = found[i] & ABS
            run[j] = m
            h[j & 3, m >> 21] += 1
            j += 1
    d1, above = _digit(h[0] + h[1] + h[2] + h[3], rank)
    rank -= above
    h[:] = 0
    j = 0
    for i in range(total):  # in place, without a branch: run[:j] are the bucket's so far
        m = run[i]
        run[j] = m
        hit = m >> 21 == d1
        h[j & 3, (m >> 10) & 0x7FF] += hit
        j += hit
    d2, more = _digit(h[0] + h[1] + h[2] + h[3], rank)
    above, rank = above + more, rank - more
    counts = np.zeros(1024, np.int64)
    for i in range(j):
        if (run[i] >> 10) & 0x7FF == d2:
            counts[run[i] & 0x3FF] += 1
    d3, more = _digit(counts, rank)
    return np.uint32((d1 << 21) | (d2 << 10) | d3), above + more


@njit(nogil=True, cache=True)
def _pick(index, found, firsts, sizes, v, above, k, out_index, out_bits):
    """Step 4: the candidates with |x| above ``v`` and the first ``k - above`` equal to it,
    in index order (segment by segment), with their values' bit patterns, into the first k
    of ``out_index`` and ``out_bits`` (k + 1 long: each candidate is written, and the next
    one's place moves on only if it is kept, without a branch)."""
    ties, j = k - above, 0
    for c in range(firsts.size):
        for i in range(firsts[c], firsts[c] + sizes[c]):
            m = found[i] & ABS
            tie = m == v
            keep = (m > v) | (tie & (ties > 0))
            out_index[j], out_bits[j] = index[i], found[i]
            j += keep
            ties -= tie & keep


def threshold_rank(k: int, n: int, s: int) -> int:
    """The sample rank (0 = largest) whose value about 1.25 k + 32 entries of n reach."""
    return min(s, math.ceil((1.25 * k + 32) * s / n))


def sample(flat: torch.Tensor) -> torch.Tensor:
    """Every (n / s)-th |x|, sorted descending (the thresholds to try)."""
    stride = max(1, flat.numel() // SAMPLE)
    return flat[::stride].abs().sort(descending=True).values


def top_k(flat: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor, bool]:
    """(ascending int32 indices of the k largest |x|, ties to the lowest index; their float32
    values; whether x holds NaN or Inf, in which case neither is computed) of a 1-D float32
    tensor."""
    if k == 0:  # an empty tensor
        empty = torch.empty(0, dtype=torch.int32, device=flat.device)
        return empty, empty.float(), False
    bits = flat.numpy().view(np.uint32)
    chunks = -(-bits.size // CHUNK)
    counts, peaks = np.empty(chunks, np.int64), np.empty(chunks, np.uint32)
    index, found = kept("select.slots", chunks * CAP, (np.int32, np.uint32))
    sampled = _sample(bits, max(1, bits.size // SAMPLE))
    whole = np.zeros(1, np.int64), np.full(1, sampled.size, np.int64)
    rank = threshold_rank(k, bits.size, sampled.size)
    while True:
        t = _kth_magnitude(sampled, *whole, rank)[0] if rank <= sampled.size else np.uint32(0)
        _scan(bits, t, counts, peaks, index, found)
        if int(peaks.max()) >= NON_FINITE:
            return torch.empty(0, dtype=torch.int32), torch.empty(0), True
        total = int(counts.sum())
        if total >= k:
            break
        rank *= 4
    firsts, sizes = np.arange(chunks, dtype=np.int64) * CAP, counts
    if int(counts.max()) > CAP:  # a crowded chunk: read the tensor again for every candidate
        firsts, sizes = np.zeros(1, np.int64), np.full(1, total, np.int64)
        starts = np.zeros(chunks, np.int64)
        np.cumsum(counts[:-1], out=starts[1:])
        index, found = np.empty(total, np.int32), np.empty(total, np.uint32)
        _gather(bits, t, starts, index, found)
    v, above = _kth_magnitude(found, firsts, sizes, k)  # the k-th largest
    out_index, out_bits = np.empty(k + 1, np.int32), np.empty(k + 1, np.uint32)
    _pick(index, found, firsts, sizes, v, above, k, out_index, out_bits)
    return torch.from_numpy(out_index[:k]), torch.from_numpy(out_bits[:k].view(np.float32)), False
