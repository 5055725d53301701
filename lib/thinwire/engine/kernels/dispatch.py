"""Where a primitive runs: the host's compiled kernels, or torch operations (Triton where it
runs) on a GPU tensor's device, which write the same bytes. The codecs call these; the host
modules (``bitpack``, ``select``, ``uniform``) compute on the host only, and their device
twins (``torch_pack``, ``torch_select``, ``torch_uniform``) on the device only, so neither
imports the other."""

from __future__ import annotations

import torch

from . import bitpack, device, select, torch_pack, torch_select, torch_uniform, uniform


def pack(codes: torch.Tensor, bits: int, out: torch.Tensor | None = None) -> torch.Tensor:
    """``bitpack.pack``: codes on a GPU are packed there."""
    bitpack.check_bits("bits", bits)
    return (torch_pack.pack if device.on_device(codes) else bitpack.pack)(codes, bits, out)


def unpack(packed: torch.Tensor, n: int, bits: int) -> torch.Tensor:
    """``bitpack.unpack``, on the bytes' device."""
    bitpack.check_bits("bits", bits)
    return (torch_pack.unpack if device.on_device(packed) else bitpack.unpack)(packed, n, bits)


def top_k(flat: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor, bool]:
    """``select.top_k``, on the tensor's device."""
    if k and device.on_device(flat):
        return torch_select.top_k(flat, k)
    return select.top_k(flat, k)


def quantize_packed(flat: torch.Tensor, lo: float, scale: float, bits: int, out: torch.Tensor,
                    checksum: bool = False) -> int | None:
    """``uniform.quantize_packed``; on a GPU the codes are made there, and no CRC is taken."""
    if device.on_device(flat):
        uniform.check_packed(flat.numel(), bits, out)
        torch_uniform.quantize_packed(flat, lo, scale, bits, out)
        return None
    return uniform.quantize_packed(flat, lo, scale, bits, out, checksum)


def dequantize_packed(packed: torch.Tensor, n: int, bits: int, lo: float, step: float,
                      out: torch.Tensor | None = None) -> torch.Tensor:
    """``uniform.dequantize_packed``, decoded where ``out`` is (a GPU: the receiver's values)."""
    if out is not None and device.on_device(out):
        uniform.check_codes(packed, n, bits)
        return torch_uniform.dequantize_packed(packed, n, bits, lo, step, out)
    return uniform.dequantize_packed(packed, n, bits, lo, step, out)
