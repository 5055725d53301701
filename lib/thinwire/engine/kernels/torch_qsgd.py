"""QSGD with torch operations, on the values' own device: the norms, random numbers, codes
and values of ``qsgd.py``'s compiled kernels (its docstring gives the algorithm), so a
message does not depend on the device that wrote it. A GPU tensor takes this path
(``device.py``); the CPU test suite runs it on CPU tensors against the host kernels.

- The counter-based uniforms are the same hash of the same counters (``lowbias32`` of
  key word 1 + the value's index, XOR key word 2, its 24 high bits), in int64 arithmetic
  cut back to 32 bits after every step.
- A bucket's L2 norm sums the float64 squares (exact: a float32 squared has 48 significant
  bits), its max norm is exact; both are rounded to float32 as the message sends them.
- Rounding is the host kernels' arithmetic: |v| times the float32 scale, exact in float64
  (24 x 24 bits), plus u, rounded to float64 and then to float32.
"""

from __future__ import annotations

import torch

from . import device, torch_pack
from .qsgd import FLOAT32_MAX

_M1, _M2, _MASK = 0x7FEB352D, 0x846CA68B, 0xFFFFFFFF


def _lowbias32(z: torch.Tensor) -> torch.Tensor:
    z = z ^ (z >> 16)
    z = (z * _M1) & _MASK
    z = z ^ (z >> 15)
    z = (z * _M2) & _MASK  # the int64 product wraps; its low 32 bits are the uint32 product's
    return z ^ (z >> 16)


def uniforms(n: int, key: int, device) -> torch.Tensor:
    """The float32 uniforms in [0, 1) of counters 0..n-1 under the 64-bit ``key``."""
    k1, k2 = key & _MASK, key >> 32
    counters = (torch.arange(n, dtype=torch.int64, device=device) + k1) & _MASK
    return ((_lowbias32(counters) ^ k2) >> 8).to(torch.float32) * (1.0 / (1 << 24))


def buckets(x: torch.Tensor, bucket: int) -> torch.Tensor:
    """``x`` as rows of ``bucket`` values, the last padded with zeros (which change neither
    norm): what ``norms`` and ``quantize_packed`` take."""
    n = x.numel()
    rows = -(-n // bucket)
    padded = torch.zeros(rows * bucket, dtype=torch.float32, device=x.device)
    padded[:n] = x.reshape(-1)
    return padded.view(rows, bucket)


def norms(rows: torch.Tensor, use_max: bool) -> torch.Tensor:
    """Each bucket's (row's) float32 norm: L2, or max |v|; NaN where a bucket holds NaN or Inf."""
    if use_max:
        poison = (rows * 0.0).sum(dim=1).to(torch.float64)  # NaN when any value is NaN or Inf
        return (rows.abs().amax(dim=1).to(torch.float64) + poison).to(torch.float32)
    wide = rows.to(torch.float64)
    return (wide * wide).sum(dim=1).sqrt().to(torch.float32)


def codes(rows: torch.Tensor, n: int, bucket_norms: torch.Tensor, bits: int, key: int) -> torch.Tensor:
    """The int32 codes (level | sign << (bits - 1)) of ``qsgd.quantize_packed``, of the first
    ``n`` values of the buckets ``rows``."""
    levels = (1 << (bits - 1)) - 1
    wide_norms = bucket_norms.to(torch.float64)
    scale = torch.where(wide_norms > 0, (levels / wide_norms).clamp(max=float(FLOAT32_MAX)), 0.0).to(torch.float32)
    u = uniforms(rows.numel(), key, rows.device).view_as(rows)
    rounded = (rows.abs().to(torch.float64) * scale.to(torch.float64)[:, None] + u.to(torch.float64)).to(torch.float32)
    level = rounded.to(torch.int32).clamp_(max=levels)
    code = level + (rows < 0).to(torch.int32) * (1 << (bits - 1))
    return code.reshape(-1)[:n]


def quantize_packed(rows: torch.Tensor, n: int, bucket_norms: torch.Tensor, bits: int, key: int,
                    out: torch.Tensor) -> torch.Tensor:
    """``qsgd.quantize_packed``'s bytes (``bitpack`` layout) for the first ``n`` values of the
    buckets ``rows`` into ``out`` (a message view)."""
    if n:
        out.copy_(torch_pack.pack(codes(rows, n, bucket_norms, bits, key), bits))
    return out


def dequantize_packed(packed: torch.Tensor, bucket: int, step: torch.Tensor, bits: int, out: torch.Tensor) -> torch.Tensor:
    """``qsgd.dequantize_packed`` on ``out``'s device: level * step[bucket], signed."""
    n = out.numel()
    if not n:
        return out
    s = (1 << (bits - 1)) - 1
    c = torch_pack.unpack(device.put(packed, out.device), n, bits).to(torch.int32)
    steps = device.put(step, out.device, torch.float32).repeat_interleave(bucket)[:n]
    value = (c & s).to(torch.float32) * steps
    return out.copy_(torch.where(c > s, -value, value))
