"""Min-max quantization with torch operations, on the values' own device: the codes and
values of ``uniform.py``'s compiled kernels (its docstring gives the arithmetic), bit for
bit, and the bytes of ``bitpack`` (``torch_pack``). A GPU tensor takes this path
(``device.py``); the CPU test suite runs it on CPU tensors against the host kernels.

The multiply-add is torch's ``add(offset, w, alpha=scale)``, which fuses it as the host
kernels do (``fastmath={"contract"}``): the same float32 rounding, so the same codes.

Where Triton runs, 1 to 8 bits on one device go to its kernels instead (``triton_uniform``:
one pass each way, the same bytes).
"""

from __future__ import annotations

import numpy as np
import torch

from . import device, torch_pack, triton_uniform


def _float32(value: float) -> float:
    """``value`` rounded to float32, as the host kernels receive it."""
    return float(np.float32(value))


def codes(flat: torch.Tensor, lo: float, scale: float, bits: int) -> torch.Tensor:
    """The nearest-level int32 codes of ``flat`` (``uniform.quantize_packed``'s, unpacked)."""
    w = flat.reshape(-1).to(torch.float32)
    if abs(lo) * scale <= (1 << bits):  # the fused form, for ranges near zero
        offset = torch.full((), _float32(0.5 - lo * scale), dtype=torch.float32, device=w.device)  # no copy, no wait
        levels = torch.add(offset, w, alpha=_float32(scale))
    else:
        half = torch.full((), 0.5, dtype=torch.float32, device=w.device)
        levels = torch.add(half, w - _float32(lo), alpha=_float32(scale))
    return levels.to(torch.int32)  # truncation: floor of the non-negative value


def quantize_packed(flat: torch.Tensor, lo: float, scale: float, bits: int, out: torch.Tensor) -> torch.Tensor:
    """``uniform.quantize_packed`` on ``flat``'s device (``out``, checked there, may be on the
    host: a message)."""
    if flat.numel():
        w = flat.reshape(-1).to(torch.float32).contiguous()
        if triton_uniform.usable(bits, w, out):
            return triton_uniform.quantize_packed(w, lo, scale, bits, out)
        packed = torch_pack.pack(codes(w, lo, scale, bits), bits)
        out.copy_(packed)
    return out


def dequantize_packed(packed: torch.Tensor, n: int, bits: int, lo: float, step: float,
                      out: torch.Tensor) -> torch.Tensor:
    """``uniform.dequantize_packed`` on ``out``'s device: the packed bytes go there once."""
    packed = device.put(packed, out.device)
    if triton_uniform.usable(bits, packed, out) and out.dtype == torch.float32:
        return triton_uniform.dequantize_packed(packed, n, bits, lo, step, out)
    values = torch_pack.unpack(packed, n, bits).to(torch.float32)
    lo_t = torch.full((), _float32(lo), dtype=torch.float32, device=out.device)  # filled there: no copy, no wait
    return torch.add(lo_t, values, alpha=_float32(step), out=out)
