"""min and max of a float32 tensor in one read (Oland & Raj Alg. 1 line 3, the range
every min-max quantizer sends), as integer maxima over its bit patterns.

Read as int32, a float32's bits order like the float for non-negative values; read as
uint32, negative values (sign bit set) sort above every non-negative one, in order of
magnitude. So with i = the int32 view and u = the uint32 view:

    max w = bits(max i)   when some w is non-negative (max i >= 0)
    min w = bits(max u)   when some w is negative     (max u >= 2^31)

and when every w has one sign the other end is bits(min i). Integer maxima vectorize
(float ones must order NaN, which keeps the compiler from it): one pass over the
weights at memory speed, in parallel over chunks. NaN and Inf come out as they are:
a NaN's bits lie above +-Inf's, so a NaN anywhere makes one of the ends NaN.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from numba import njit, prange

from . import device

CHUNK = 1 << 16  # values per parallel chunk
SIGN = 1 << 31


@njit(nogil=True, cache=True)
def _max_keys(k):
    """(max of k as int32, max of k as uint32)."""
    imax = np.int32(-SIGN)
    umax = np.uint32(0)
    for i in range(k.size):
        v = k[i]
        imax = max(imax, v)
        umax = max(umax, np.uint32(v))
    return imax, umax


@njit(nogil=True, cache=True)
def _min_key(k):
    imin = np.int32(SIGN - 1)
    for i in range(k.size):
        imin = min(imin, k[i])
    return imin


@njit(parallel=True, nogil=True, cache=True)
def _chunks_max_keys(k, imax, umax):
    n = k.size
    for c in prange(imax.size):
        imax[c], umax[c] = _max_keys(k[c * CHUNK:min(n, c * CHUNK + CHUNK)])


@njit(nogil=True, cache=True)
def _chunked_max_keys(k):
    """The chunks' maxima in one parallel region, then theirs on this thread (an array
    reduction inside a parallel function is a parallel region of its own)."""
    m = (k.size + CHUNK - 1) // CHUNK
    imax = np.empty(m, np.int32)
    umax = np.empty(m, np.uint32)
    _chunks_max_keys(k, imax, umax)
    return _max_keys(imax)[0], _max_keys(umax.view(np.int32))[1]


@njit(parallel=True, nogil=True, cache=True)
def _chunks_min_key(k, imin):
    n = k.size
    for c in prange(imin.size):
        imin[c] = _min_key(k[c * CHUNK:min(n, c * CHUNK + CHUNK)])


@njit(nogil=True, cache=True)
def _chunked_min_key(k):
    imin = np.empty((k.size + CHUNK - 1) // CHUNK, np.int32)
    _chunks_min_key(k, imin)
    return _min_key(imin)


def _as_float(bits) -> float:
    return float(np.array([bits], dtype=np.uint32).view(np.float32)[0])


def _ends(imax: int, umax: int, min_key) -> tuple[float, float]:
    """(min, max) from the maxima of the int32 and uint32 views, and ``min_key()`` (the int32
    view's minimum), asked for only when every value has one sign."""
    if imax >= 0 and umax >= SIGN:  # both signs: the common case, one pass
        return _as_float(umax), _as_float(imax)
    imin = int(min_key()) & 0xFFFFFFFF
    if imax < 0:  # every value negative (sign bit set)
        return _as_float(umax), _as_float(imin)
    return _as_float(imin), _as_float(imax)  # every value non-negative


def extrema(flat: torch.Tensor) -> tuple[float, float]:
    """(min, max) of a non-empty tensor, computed in float32 (NaN or Inf pass through); a
    GPU tensor's on the GPU (``device.py``)."""
    if flat.numel() == 0:
        raise ValueError("extrema: the tensor is empty")
    x = flat.detach().reshape(-1)
    x = (x if x.dtype == torch.float32 else x.to(torch.float32)).contiguous()
    if device.on_device(x):
        # one read of the values as floats: where both ends are finite and not zero, each is
        # one bit pattern, the one the integer maxima give; otherwise (NaN, Inf, a zero of
        # either sign) the same maxima in torch operations (the uint32 view as int64, which
        # reads and writes the tensor several times over)
        lo, hi = torch.stack(torch.aminmax(x)).tolist()
        if math.isfinite(lo) and math.isfinite(hi) and lo != 0.0 and hi != 0.0:
            return lo, hi
        k = x.view(torch.int32)
        imax, umax = torch.stack([k.max().to(torch.int64), (k.to(torch.int64) & 0xFFFFFFFF).max()]).tolist()
        return _ends(imax, umax, k.min)  # both maxima in one copy to the host
    k = x.numpy().view(np.int32)
    small = k.size <= CHUNK
    imax, umax = _max_keys(k) if small else _chunked_max_keys(k)
    return _ends(int(imax), int(umax), lambda: _min_key(k) if small else _chunked_min_key(k))
