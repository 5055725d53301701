"""Alg. 1 of Aji & Heafield (2017) as one compiled pass per chunk (``sparsify/drop_pass.py``):

    corrected = residual + gradient      (written into the residual's buffer, or a second one)
    survivor  = not |corrected| <= t     (NaN and Inf always survive)
    survivors' (index, value) recorded, and their residual zeroed

Chunks run in parallel, testing blocks of 16 values at once, each writing its survivors
into its own slots of a shared output (``capacity`` per chunk, about 4x the expected
count). A chunk that finds more stops recording at the first survivor that does not fit
and says where: its remainder, already corrected, is finished by ``rest`` afterwards
(counted, then gathered). So the tensor is
read and written once, whatever the threshold. Keeping ties (``|x| >= t``) is the same
test against the float32 just below t, so one comparison serves both.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange


BLOCK = 16  # values tested together: the add and the test vectorize, survivors are rare


@njit(nogil=True, cache=True, inline="always")
def _record(res, t, keep, first, lo, hi, index, values, j, found, capacity):
    """Record the survivors of res[lo:hi]: (found, position of the first that did not fit or -1)."""
    for i in range(lo, hi):
        x = res[i]
        if not abs(x) <= t:
            if found == capacity:
                return found, i
            index[j + found], values[j + found] = first + i, x
            found += 1
            if keep:
                res[i] = 0.0
    return found, -1


@njit(nogil=True, cache=True)
def _add_and_drop_chunk(src, grad, res, t, first, index, values, j, capacity):
    """Alg. 1 on one chunk: each block of ``BLOCK`` values is corrected and tested at once
    (a fixed trip count, so it vectorizes), and only a block with a survivor is walked
    value by value."""
    found, n = 0, res.size
    full = n - n % BLOCK
    for base in range(0, n, BLOCK):
        end = base + BLOCK if base < full else n
        hit = False
        if base < full:
            for i in range(base, base + BLOCK):
                x = src[i] + grad[i]
                res[i] = x
                hit |= not abs(x) <= t
        else:
            for i in range(base, n):
                x = src[i] + grad[i]
                res[i] = x
                hit |= not abs(x) <= t
        if hit:
            found, stop = _record(res, t, True, first, base, end, index, values, j, found, capacity)
            if stop >= 0:
                for r in range(end, n):  # the rest is corrected, not yet dropped
                    res[r] = src[r] + grad[r]
                return found, stop
    return found, -1


@njit(parallel=True, nogil=True, cache=True)
def drop_chunks(src, grad, res, add, starts, stops, thresholds, keep, capacity, index, values, found, stopped):
    """Every chunk [starts[c], stops[c]) against its threshold; ``add``: ``res`` is first
    written with ``src + grad`` (``src`` may be ``res``), and implies ``keep``."""
    for c in prange(starts.size):
        a, b = starts[c], stops[c]
        if add:
            found[c], stopped[c] = _add_and_drop_chunk(src[a:b], grad[a:b], res[a:b], thresholds[c], a, index, values,
                                                       c * capacity, capacity)
        else:
            found[c], stopped[c] = _record(res[a:b], thresholds[c], keep, a, 0, b - a, index, values, c * capacity,
                                           0, capacity)


@njit(nogil=True, cache=True)
def rest(res, a, b, t, keep):
    """(index, values) of the survivors in the corrected ``res[a:b]``, zeroed when ``keep``."""
    n = 0
    for i in range(a, b):
        n += not abs(res[i]) <= t
    index, values = np.empty(n, np.int64), np.empty(n, np.float32)
    _record(res, t, keep, 0, a, b, index, values, 0, 0, n)
    return index, values
