"""Bin codes with torch operations, on the values' own device: Oland & Raj's bins over one
range (``bin_quantize.py``) and MQGrad's bins over each row's range (``rows.py``),
the same codes and values as those compiled kernels. A GPU tensor takes this path
(``device.py``); the CPU test suite runs it on CPU tensors against the host kernels.

Both compute in float64 as the host kernels do, one IEEE operation at a time (subtract,
multiply, divide, floor: each correctly rounded on every device, and no multiply-add to
fuse), so the codes are equal bit for bit.
"""

from __future__ import annotations

import torch


def bin_codes(flat: torch.Tensor, lo: float, scale: float, top: int) -> torch.Tensor:
    """min(floor((w - lo) * scale), top) as int32, for w >= lo (``bin_quantize._codes``)."""
    k = (flat.reshape(-1).to(torch.float64) - lo).mul_(scale)
    return k.to(torch.int64).clamp_max_(top).to(torch.int32)  # truncation: floor of the non-negative value


def row_scales(lo: torch.Tensor, hi: torch.Tensor, eps: float, levels: int) -> torch.Tensor:
    """Each row's (lo, levels / (hi + eps - lo)) in float64, 0 for an empty span: [rows, 2]."""
    low = lo.to(torch.float64)
    span = (hi.to(torch.float64) + eps) - low
    return torch.stack([low, torch.where(span > 0, levels / span, torch.zeros_like(span))], 1)


def row_codes(rows: torch.Tensor, lo: torch.Tensor, hi: torch.Tensor, eps: float, levels: int) -> torch.Tensor:
    """``rows.row_codes``: each row's codes in its ``levels`` bins of [lo, hi + eps] (int32)."""
    bins = row_scales(lo, hi, eps, levels)
    k = torch.floor((rows.to(torch.float64) - bins[:, :1]) * bins[:, 1:])
    return k.clamp_(0.0, levels - 1).to(torch.int32)


def row_steps(lo: torch.Tensor, hi: torch.Tensor, levels: int) -> torch.Tensor:
    """Each row's (lo, (hi - lo) / levels) in float64: [rows, 2]."""
    low = lo.to(torch.float64)
    return torch.stack([low, (hi.to(torch.float64) - low) / levels], 1)


def row_values(codes: torch.Tensor, lo: torch.Tensor, hi: torch.Tensor, levels: int) -> torch.Tensor:
    """``rows.row_values``: the centre of each code's bin in its row's range (float32)."""
    bins = row_steps(lo, hi, levels)
    return (bins[:, :1] + (codes.to(torch.float64) + 0.5) * bins[:, 1:]).to(torch.float32)
