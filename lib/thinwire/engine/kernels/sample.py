"""Uniform sampling without replacement outside an excluded set, as a compiled kernel
(Slim-DP's Exploration, ``policies/core_explorer.py``).

Draws indices i_1, i_2, ... uniformly from [0, n) with a counter-based generator (the
``lowbias32`` hash of ``kernels/qsgd.py`` on a 64-bit key), skips excluded and already
drawn ones, and stops at ``count``: the first ``count`` distinct admissible draws are a
uniformly random subset of the admissible indices. Each draw maps a 32-bit hash to
[0, n) without bias (Lemire's multiply-and-reject). One sequential pass over about
count * n / (admissible) draws, against an O(n) random permutation: the explorer costs
in proportion to its size, not to the model's.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .qsgd import lowbias32

_MASK32 = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)


@njit(nogil=True, cache=True)
def _sample(excluded, count, k1, k2, out):
    n = np.uint64(excluded.size)
    threshold = (np.uint64(1 << 32) - n) % n  # draws whose low word falls below it are rejected
    drawn = 0
    counter = np.uint32(0)
    while drawn < count:
        h = np.uint64(lowbias32(np.uint32(lowbias32(np.uint32(counter + k1)) ^ k2)))
        counter = np.uint32(counter + np.uint32(1))
        m = h * n
        if (m & _MASK32) < threshold:
            continue
        i = np.int64(m >> _S32)
        if excluded[i]:
            continue
        excluded[i] = True
        out[drawn] = i
        drawn += 1
    for j in range(count):  # leave ``excluded`` as it came
        excluded[out[j]] = False


def sample_outside(excluded: np.ndarray, count: int, free: int, key: int) -> np.ndarray:
    """``count`` distinct indices i with ``excluded[i]`` False, uniformly at random, in draw
    order (int64). ``free``: how many indices are not excluded (the caller knows it);
    ``excluded`` (bool) is used as scratch and restored; ``key`` < 2^64."""
    if count > free:
        raise ValueError(f"cannot draw {count} indices from {free} admissible ones")
    out = np.empty(count, np.int64)
    if count:
        _sample(excluded, count, np.uint32(key & 0xFFFFFFFF), np.uint32(key >> 32), out)
    return out
