"""Per-row min-max bins as compiled kernels (``quantize/column_minmax.py``, MQGrad's
quantizer): codes from each row's range, and values back from codes, one parallel region
over the rows per call (see ``uniform.py`` for why one region matters on a busy machine).

The arithmetic is the float64 of the module it serves, operation for operation, with no
multiply-add contracted, so the codes and values are the ones the vectorized tensor
expressions give:

    span  = (hi + eps) - lo;  scale = 2^K / span (0 when span <= 0)
    code  = min(max(floor((w - lo) * scale), 0), 2^K - 1)
    value = float32(lo + (code + 1/2) * ((hi - lo) / 2^K))
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange


@njit(parallel=True, nogil=True, cache=True)
def row_codes(m, lo, hi, eps, levels, out):
    """``out[r, c]``: the code of ``m[r, c]`` (float32) in row r's ``levels`` bins."""
    rows, cols = m.shape
    top = levels - 1
    for r in prange(rows):
        low = np.float64(lo[r])
        span = (np.float64(hi[r]) + eps) - low
        scale = levels / span if span > 0 else 0.0
        for c in range(cols):
            k = np.floor((np.float64(m[r, c]) - low) * scale)  # in [0, levels]: no overflow
            out[r, c] = min(max(k, 0.0), top)


@njit(parallel=True, nogil=True, cache=True)
def row_values(codes, lo, hi, levels, out):
    """``out[r, c]`` (float32): the centre of bin ``codes[r, c]`` of row r's range."""
    rows, cols = codes.shape
    for r in prange(rows):
        low = np.float64(lo[r])
        step = (np.float64(hi[r]) - low) / levels
        for c in range(cols):
            out[r, c] = np.float32(low + (np.float64(codes[r, c]) + 0.5) * step)
