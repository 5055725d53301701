"""16-bit float message parts (fp16, bf16) cast to or from float32 on a GPU and checksummed
there (``triton_crc``): a message part of 16-bit values written from float32 values, or
read into them, and the CRC-32C of its bytes. A kernel that cast and checksummed in one
pass was measured on H100s and deleted (the engine's README records it).
"""

from __future__ import annotations

import torch

from . import triton_crc
from .triton_crc import AVAILABLE

HALVES = (torch.float16, torch.bfloat16)


def crc32c_cast(source: torch.Tensor, target: torch.Tensor, prefix: bytes = b"",
                trailer: torch.Tensor | None = None, rest: int = 0) -> torch.Tensor:
    """``target.copy_(source)`` between float32 and a 16-bit float (float16 or bfloat16), then
    the CRC-32C of ``prefix`` and the 16-bit values' bytes, as ``triton_crc.crc32c_copy``
    returns and writes it (``rest`` too)."""
    if not AVAILABLE:
        raise RuntimeError("triton_halves needs the triton package (it comes with CUDA builds of torch)")
    widen = target.dtype == torch.float32
    half = source if widen else target
    if not ({source.dtype, target.dtype} == {torch.float32, half.dtype} and half.dtype in HALVES
            and source.dim() == target.dim() == 1 and source.numel() == target.numel()
            and source.is_contiguous() and target.is_contiguous() and source.device == target.device):
        raise ValueError(f"source and target must be contiguous 1-d tensors of as many values on one device, one "
                         f"float32 and one of {HALVES}, got {source.dtype} {tuple(source.shape)} on {source.device} "
                         f"and {target.dtype} {tuple(target.shape)} on {target.device}")
    if trailer is not None:
        triton_crc._check(trailer=trailer)
    numel = source.numel()
    add = triton_crc.after(prefix, 2 * numel + rest)
    if not numel:
        return triton_crc.empty(source.device, add, trailer)
    target.copy_(source)
    return triton_crc._checksum(half.view(torch.uint8), triton_crc.shifted(rest), add, trailer)
