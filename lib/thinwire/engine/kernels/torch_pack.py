"""Bit packing with torch operations, on the codes' own device: the same bytes as the
compiled host kernels (``bitpack.py``, whose docstring gives the layout), without a copy to
the host. The host kernels stay the CPU path; this one is what a GPU tensor takes, and the
CPU test suite runs it on CPU tensors against them.

A group of 8 b-bit codes fills exactly b bytes: the codes of each group are shifted into one
64-bit word (each code by its place in the group, then summed, all groups at once), and the
word's first b bytes in memory order are the group's bytes (a little-endian machine: x86,
ARM, every CUDA GPU).
Unpacking reads each group's b bytes back into a word and masks each code out. For b > 8
the low bytes come first, then the high b - 8 bits of every code as a (b - 8)-bit stream.
"""

from __future__ import annotations

import functools
import sys

import torch

from .bitpack import check_bits, packed_bytes

if sys.byteorder != "little":  # pragma: no cover - no big-endian machine runs torch's CUDA
    raise ImportError("thinwire.engine.kernels.torch_pack assumes a little-endian machine")


def _stream(parts: torch.Tensor, width: int, out: torch.Tensor) -> None:
    """``parts`` (int64, each < 2**width) as a ``width``-bit stream into the uint8 ``out``."""
    n = parts.numel()
    groups = -(-n // 8)
    padded = torch.zeros(groups * 8, dtype=torch.int64, device=parts.device)
    padded[:n] = parts
    # the 8 codes' bits do not overlap, so their sum is their OR (no carries, even into the sign bit)
    words = (padded.view(groups, 8) << _shifts(width, str(parts.device))).sum(1)
    out.copy_(words.view(torch.uint8).view(groups, 8)[:, :width].reshape(-1)[:out.numel()])


@functools.lru_cache(maxsize=32)
def _shifts(width: int, where: str) -> torch.Tensor:
    """Where each of a group's 8 codes of ``width`` bits starts in its word (int64 on ``where``)."""
    return torch.arange(8, dtype=torch.int64, device=where) * width


def _unstream(packed: torch.Tensor, n: int, width: int) -> torch.Tensor:
    """Inverse of ``_stream``: n int64 parts from the first bytes of ``packed``."""
    groups = -(-n // 8)
    used = (n * width + 7) // 8
    staged = torch.zeros(groups * width, dtype=torch.uint8, device=packed.device)
    staged[:used] = packed[:used]
    padded = torch.zeros(groups, 8, dtype=torch.uint8, device=packed.device)
    padded[:, :width] = staged.view(groups, width)
    words = padded.view(torch.int64).view(groups)
    mask = (1 << width) - 1
    return ((words.unsqueeze(1) >> _shifts(width, str(packed.device))) & mask).reshape(-1)[:n]


def pack(codes: torch.Tensor, bits: int, out: torch.Tensor | None = None) -> torch.Tensor:
    """``bitpack.pack`` on the codes' device: codes in [0, 2**bits) of any integer dtype
    into ``packed_bytes`` uint8 bytes (written into ``out`` when given)."""
    check_bits("bits", bits)
    n = codes.numel()
    if out is None:
        out = torch.empty(packed_bytes(n, bits), dtype=torch.uint8, device=codes.device)
    flat = codes.reshape(-1)
    if n == 0:
        return out
    if bits == 8:
        return out.copy_(flat)
    wide = flat.to(torch.int64)
    if bits < 8:
        _stream(wide, bits, out)
    else:
        out[:n].copy_(wide & 0xFF)
        _stream(wide >> 8, bits - 8, out[n:])
    return out


def unpack(packed: torch.Tensor, n: int, bits: int) -> torch.Tensor:
    """``bitpack.unpack`` on the bytes' device: uint8 codes for bits <= 8, int32 above."""
    check_bits("bits", bits)
    if packed.numel() != packed_bytes(n, bits):
        raise ValueError(f"expected {packed_bytes(n, bits)} packed bytes for {n} {bits}-bit codes, got {packed.numel()}")
    if n == 0:
        return torch.empty(0, dtype=torch.uint8 if bits <= 8 else torch.int32, device=packed.device)
    if bits == 8:
        return packed.clone()
    if bits < 8:
        return _unstream(packed, n, bits).to(torch.uint8)
    low = packed[:n].to(torch.int64)
    return (low | (_unstream(packed[n:], n, bits - 8) << 8)).to(torch.int32)
