"""Bin quantization with one range per column of a 2-D tensor (``binquant(per='column')``;
``per='row'`` quantizes the columns of the transpose: one range per row).

The same bins as ``bin_quantize.py`` (codes counted up from the minimum, the maximum joins
the last bin, a constant column decodes exactly to its value), with w_min and w_max taken
over each column j of W (rows x columns) instead of over the whole tensor:

    i_rj = min(floor(2^N (w_rj - lo_j) / (hi_j - lo_j)), 2^N - 1)
    w'_rj = lo_j + (hi_j - lo_j) (i_rj + 1/2) / 2^N

A column whose values span a small range then keeps its resolution when another column
spans a large one. The ranges travel as two float32 parts of ``columns`` values each (the
tensor is float32, so its minima and maxima are exact in them). A few vectorized tensor
operations, in float64 like the per-tensor kernels.
"""

from __future__ import annotations

import numpy as np
import torch

from ...engine import code_dtype


def column_ranges(matrix: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(lo, hi): float32 minimum and maximum of each column."""
    m = matrix.to(torch.float32)
    return m.amin(0), m.amax(0)


def column_codes(matrix: torch.Tensor, lo: torch.Tensor, hi: torch.Tensor, bits: int) -> np.ndarray:
    """Row-major codes (uint8 up to 8 bits, else uint16) of ``matrix`` with per-column ranges."""
    span = (hi - lo).to(torch.float64)
    scale = torch.where(span > 0, (1 << bits) / span, torch.zeros_like(span))
    codes = ((matrix.to(torch.float64) - lo.to(torch.float64)) * scale).floor_().clamp_(0, (1 << bits) - 1)
    return codes.reshape(-1).numpy().astype(code_dtype(bits))


def column_centres(codes: np.ndarray, lo: torch.Tensor, hi: torch.Tensor, bits: int,
                   out: torch.Tensor | None = None) -> torch.Tensor:
    """The flat float32 bin centres of row-major ``codes`` (columns = ``lo.numel()``)."""
    columns = lo.numel()
    i = torch.from_numpy(codes.astype(np.float64)).reshape(-1, columns)
    span = (hi - lo).to(torch.float64)
    values = (lo.to(torch.float64) + span * (i + 0.5) / (1 << bits)).to(torch.float32).reshape(-1)
    return values if out is None else out.copy_(values)
