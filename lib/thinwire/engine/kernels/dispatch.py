"""Where a primitive runs: the host's compiled kernels, or torch operations (Triton where it
runs) on a GPU tensor's device, which write the same bytes. The codecs call these; the host
modules (``bitpack``, ``select``, ``uniform``, ``qsgd``) compute on the host only, and their
device twins (``torch_pack``, ``torch_select``, ``torch_uniform``, ``torch_qsgd``,
``triton_qsgd``) on the device only, so neither imports the other."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch

from ..errors import CorruptMessageError
from . import bitpack, device, qsgd, select, torch_pack, torch_qsgd, torch_select, torch_uniform, triton_qsgd, uniform


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


@dataclass
class QSGDCodes:
    """Steps 1-4 of QSGD for one tensor, on its device: ``write(view)`` writes the packed
    codes into a byte view and returns their CRC-32C where the host kernel took it (else
    None); ``norms``, one float32 per bucket, are a host array (which the host kernel fills
    as it writes the codes) or the device's tensor (Triton's single pass)."""

    write: Callable[[torch.Tensor], int | None]
    norms: np.ndarray | torch.Tensor

    def write_norms(self, view: torch.Tensor) -> None:
        """The norms into the message's view: a device tensor's copied there; a host array by
        numpy into a host message (a torch copy of a few hundred KB is a parallel region of its
        own), to a device message with no wait."""
        if isinstance(self.norms, torch.Tensor):
            view.copy_(self.norms)
        elif view.device.type == "cpu":
            np.copyto(view.numpy(), self.norms)
        else:
            view.copy_(torch.from_numpy(self.norms), non_blocking=True)


def qsgd_codes(flat: torch.Tensor, bucket: int, norm: str, bits: int, key: int, refuse: Callable[[bool], None],
               fixed: bool = True, judge_later: Callable[[torch.Tensor], None] | None = None) -> QSGDCodes:
    """QSGD's codes of ``flat`` where it lives: one Triton pass for norms and codes on a GPU
    where Triton runs (``fixed``-width codes only), torch's operations on another device, the
    host kernel on the host. Where a bucket norm is not finite, ``refuse(finite_input)``
    raises; on the Triton path ``judge_later`` (a ``deferred_checks`` block's) takes the
    norms' greatest instead of a read."""
    n, use_max = flat.numel(), norm == "max"
    if fixed and device.on_device(flat) and triton_qsgd.usable(bits, bucket, flat.reshape(-1)):
        x = flat.reshape(-1).to(torch.float32).contiguous()
        norms = torch.empty(-(-n // bucket), dtype=torch.float32, device=x.device)

        def write_triton(view):  # a host message's codes are made on the device and copied over
            device.written_through(view, x.device, triton_qsgd.usable(bits, bucket, x, view),
                                   lambda codes: triton_qsgd.quantize_packed(x, bucket, use_max, bits, key, norms, codes))
            # the norms are >= 0 or NaN: their maximum (NaN where any is) is finite only if all are
            if norms.numel() and judge_later is not None:
                judge_later(norms.max())
            elif norms.numel() and not math.isfinite(norms.max().item()):
                refuse(bool(torch.isfinite(x).all()))
        return QSGDCodes(write_triton, norms)
    if device.on_device(flat):  # norms and codes on the tensor's device, the same bytes
        rows = torch_qsgd.buckets(flat, bucket)
        on_device = torch_qsgd.norms(rows, use_max)
        host = on_device.cpu().numpy()
        if not np.isfinite(host).all():
            refuse(bool(torch.isfinite(flat).all()))

        def write_torch(view):  # no CRC taken on the way
            torch_qsgd.quantize_packed(rows, n, on_device, bits, key, view)
        return QSGDCodes(write_torch, host)
    x, norms = uniform.float32_numpy(flat), np.empty(-(-n // bucket), np.float32)

    def write_host(view):
        crc = qsgd.quantize_packed(x, bucket, norm, bits, key, norms, view.numpy())
        if not np.isfinite(norms).all():
            refuse(bool(np.isfinite(x).all()))
        return crc
    return QSGDCodes(write_host, norms)


def qsgd_steps(norms: torch.Tensor, levels: int) -> np.ndarray:
    """Each bucket's step, norm / levels (float32), from received norms that must be finite
    and non-negative (``CorruptMessageError``)."""
    host = norms.cpu().numpy()  # one per bucket; from a message on a GPU, copied
    if not (np.isfinite(host).all() and (host >= 0).all()):
        raise CorruptMessageError("qsgd: bucket norms must be finite and non-negative")
    return (host.astype(np.float64) / levels).astype(np.float32)


def qsgd_values(packed: torch.Tensor, numel: int, bucket: int, norms: torch.Tensor, bits: int, levels: int,
                out: torch.Tensor | None = None) -> torch.Tensor:
    """Step 5 where ``out`` is (or the norms, without one): one Triton pass on a GPU where
    Triton runs, torch's operations on another device, the host kernel on the host."""
    if device.on_device(out if out is not None else norms) and triton_qsgd.usable(bits, bucket, packed, norms):
        if norms.numel():  # both ends in one read: NaN anywhere makes both NaN
            least, greatest = torch.stack(torch.aminmax(norms)).tolist()
            if not (least >= 0 and math.isfinite(greatest)):
                raise CorruptMessageError("qsgd: bucket norms must be finite and non-negative")
        out = torch.empty(numel, dtype=torch.float32, device=norms.device) if out is None else out
        if out.device == norms.device and out.is_contiguous():
            return triton_qsgd.dequantize_packed(packed, bucket, norms, bits, out)
    step = qsgd_steps(norms, levels)
    out = torch.empty(numel, dtype=torch.float32) if out is None else out
    if device.on_device(out):
        return torch_qsgd.dequantize_packed(packed, bucket, torch.from_numpy(step), bits, out)
    qsgd.dequantize_packed(packed.contiguous().numpy(), bucket, step, bits, out.numpy())
    return out
