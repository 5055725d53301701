"""Oland & Raj's bin quantizer (Alg. 1 QUANTIZE, Alg. 2 line 4) and its entropy
estimate (Alg. 1 ESTIMATE ENTROPY, ESTIMATE DISTRIBUTION), made consistent.

The paper quantizes with floor(2^K (w_max - w) / (w_max - w_min)) but decodes with
w_min + (w_max - w_min)(i + 1/2) / 2^N: the encoder counts bins down from w_max, the
decoder up from w_min, and w = w_min maps to 2^K, one past the last bin. We use the
decoder's direction for both and clamp:

    i  = min(floor(2^N (w - w_min) / (w_max - w_min)), 2^N - 1)   (w_max joins the last bin)
    w' = w_min + (w_max - w_min) (i + 1/2) / 2^N                  (the centre of bin i)

so |w - w'| <= (w_max - w_min) / 2^(N+1). A constant layer (w_max == w_min) gets code 0
everywhere and decodes exactly to w_min. NaN or Inf raises ``ValueError``.

Codes are numpy arrays (uint8 for N <= 8, uint16 up to 16 bits): the entropy coders
(``symbol_coders.py``) work on them.
"""

from __future__ import annotations

import numpy as np
import torch

from .quantize import dequantize_codes

BLOCK = 1 << 18  # floats per block: the float intermediate stays in cache
MAX_BITS = 16


def check_bits(name: str, bits) -> int:
    if not (isinstance(bits, int) and not isinstance(bits, bool) and 1 <= bits <= MAX_BITS):
        raise ValueError(f"{name}={bits!r} is not allowed: {name} must be an int in [1, {MAX_BITS}]")
    return bits


def code_dtype(bits: int):
    return np.uint8 if bits <= 8 else np.uint16


def bin_codes(flat: torch.Tensor, lo: float, hi: float, bits: int, out: np.ndarray | None = None) -> np.ndarray:
    """i = min(floor(2^bits (w - lo) / (hi - lo)), 2^bits - 1) for every w (0 when hi == lo)."""
    n = flat.numel()
    out = np.empty(n, dtype=code_dtype(bits)) if out is None else out
    if hi <= lo:
        out.fill(0)
        return out
    scale = (1 << bits) / (hi - lo)
    top = float((1 << bits) - 1)
    src = flat if flat.dtype == torch.float32 else flat.to(torch.float32)
    scratch = torch.empty(min(n, BLOCK), dtype=torch.float32)
    buf = scratch.numpy()
    if scale > 1e30:  # a range of a few subnormals: float32 cannot hold the scale
        exact = ((src.to(torch.float64) - lo) * scale).floor_().clamp_(0, top)
        out[:] = exact.numpy()
        return out
    offset = torch.tensor(-lo * scale, dtype=torch.float32)
    # w * scale - lo * scale in one pass: rounding can push it just below 0 or to 2^bits,
    # which the clamp puts back in [0, 2^bits - 1]; truncation of a non-negative float is floor.
    for start in range(0, n, BLOCK):
        stop = min(n, start + BLOCK)
        tmp = scratch[: stop - start]
        torch.add(offset, src[start:stop], alpha=scale, out=tmp)
        tmp.clamp_(0.0, top)
        np.copyto(out[start:stop], buf[: stop - start], casting="unsafe")
    return out


def bin_centres(codes: np.ndarray, lo: float, hi: float, bits: int,
                out: torch.Tensor | None = None) -> torch.Tensor:
    """w' = lo + (hi - lo)(i + 1/2) / 2^bits, as float32 (Alg. 2 line 4)."""
    if hi <= lo:
        out = torch.empty(codes.size, dtype=torch.float32) if out is None else out
        return out.fill_(lo)
    step = (hi - lo) / (1 << bits)
    return dequantize_codes(torch.from_numpy(codes), lo + 0.5 * step, step, out=out)


def histogram(codes: np.ndarray, bits: int) -> np.ndarray:
    """ESTIMATE DISTRIBUTION, unnormalized: counts of each of the 2^bits bins (int64)."""
    return np.bincount(codes, minlength=1 << bits)


def entropy_bits(counts: np.ndarray) -> float:
    """-sum p log2 p of a histogram (bits)."""
    counts = np.asarray(counts, dtype=np.float64)
    total = counts.sum()
    if total <= 0:
        return 0.0
    p = counts[counts > 0] / total
    return float(-(p * np.log2(p)).sum())


def estimate_entropy(flat: torch.Tensor, lo: float, hi: float, m: int, f: float,
                     generator: torch.Generator) -> float:
    """ESTIMATE ENTROPY: the entropy of a random subset of ``f * n`` values (at least one),
    drawn without replacement from ``generator``, quantized to ``m`` bits over the whole
    tensor's [lo, hi]."""
    n = flat.numel()
    if n == 0:
        return 0.0
    k = min(n, max(1, round(f * n)))
    sample = flat if k == n else flat[torch.randperm(n, generator=generator)[:k]]
    return entropy_bits(histogram(bin_codes(sample, lo, hi, m), m))
