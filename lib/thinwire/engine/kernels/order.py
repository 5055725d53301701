"""The j-th smallest of a float32 array and how many values equal it, by a radix select on
its bit patterns: gradient dropping's sampled threshold (Aji & Heafield 2017, Sec. 4: the
order statistic of a 0.1% sample, ``sparsify/drop_threshold.py``) on the host.

Each float32 maps to a 32-bit key with the float order: a non-negative value's pattern with
the sign bit set, a negative value's pattern inverted, both zeros to the key of +0.0 and
every NaN to the largest key (``torch.kthvalue`` orders NaN above everything too). Three
counting passes over the keys, 11, 11 and 10 bits at a time, each among the values whose
higher bits were chosen already, find the key of the j-th smallest; its value is returned.
It takes a fraction of ``torch.kthvalue``'s time on fresh samples (the engine's README);
gradient dropping pays it once per message.
"""

from __future__ import annotations

import numpy as np
from numba import njit

SIGN = np.uint32(0x80000000)
NAN_KEY = np.uint32(0xFFFFFFFF)
LEVELS = ((21, 0x7FF), (10, 0x7FF), (0, 0x3FF))  # (shift, mask) of each pass, highest bits first


@njit(nogil=True, cache=True, inline="always")
def _key(x, bits):
    if x != x:
        return NAN_KEY
    if x == 0:
        return SIGN
    return bits ^ SIGN if bits < SIGN else ~bits


@njit(nogil=True, cache=True)
def kth_smallest(values, j):
    """(the j-th smallest of ``values`` (1-based, 1 <= j <= size), how many values equal it
    under ``==``: none for NaN) of a 1-D float32 array."""
    bits = values.view(np.uint32)
    keys = np.empty(bits.size, np.uint32)
    for i in range(bits.size):
        keys[i] = _key(values[i], bits[i])
    left, rank = bits.size, j  # keys[:left] share the bits chosen so far
    for shift, mask in LEVELS:
        counts = np.zeros(mask + 1, np.int64)
        for i in range(left):
            counts[(keys[i] >> shift) & mask] += 1
        digit = 0
        while rank > counts[digit]:
            rank -= counts[digit]
            digit += 1
        kept = 0
        for i in range(left):  # in place: the keys in the chosen digit's bucket move to the front
            if (keys[i] >> shift) & mask == digit:
                keys[kept] = keys[i]
                kept += 1
        left = kept
    key = keys[0]
    if key == NAN_KEY:
        return np.float32(np.nan), 0
    found = np.uint32(key ^ SIGN) if key >= SIGN else np.uint32(~key)
    value = np.array([found], np.uint32).view(np.float32)[0]
    equal = 0
    for i in range(bits.size):
        equal += values[i] == value
    return value, equal
