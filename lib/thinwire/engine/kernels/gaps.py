"""Offset-value index coding's two passes (``offsets.py``), compiled: a few
hundred thousand gaps go through one loop each way instead of a chain of whole-array
operations (each a pass over memory and a temporary)."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(nogil=True, cache=True)
def long_gaps(index, limit8, limit16):
    """How many gaps (``index[i] - index[i-1]``, the first ``index[0] + 1``) reach each limit.
    Each gap is read from the indices alone, with no running value between iterations, so
    the loop vectorizes."""
    if index.size == 0:
        return 0, 0
    long8, long16 = np.int64(index[0] + 1 >= limit8), np.int64(index[0] + 1 >= limit16)
    for i in range(1, index.size):
        gap = index[i] - index[i - 1]
        long8 += gap >= limit8
        long16 += gap >= limit16
    return long8, long16


@njit(nogil=True, cache=True)
def split_gaps(index, escape, words, escaped):
    """Every gap into ``words`` (``escape`` where it does not fit), the long ones whole
    into ``escaped`` in order. Without a branch: every gap is written at the next escaped
    position, which moves on only past a long one, so ``escaped`` needs room for one more
    than the long gaps."""
    previous, e = -1, 0
    for i in range(index.size):
        gap = index[i] - previous
        previous = index[i]
        long = gap >= escape
        words[i] = escape if long else gap
        escaped[e] = gap
        e += long


@njit(nogil=True, cache=True)
def join_gaps(words, escape, escaped, index):
    """The inverse: ``index`` filled from the gaps; returns 0, or 1 when the escapes and the
    long gaps do not match in number, 2 when a gap is below 1."""
    e, position = 0, -1
    for i in range(words.size):
        gap = np.int64(words[i])
        if gap == escape:
            if e == escaped.size:
                return 1
            gap = np.int64(escaped[e])
            e += 1
        if gap < 1:
            return 2
        position += gap
        index[i] = position
    return 0 if e == escaped.size else 1
