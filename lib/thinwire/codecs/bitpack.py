"""Dense bit packing of b-bit unsigned codes (b = 1..16) into bytes, little-endian.

Layout: b = 8 is the codes themselves; b in {1, 2, 4} packs 8/b codes per byte; other
b <= 8 pack each group of 8 codes into b bytes (through one 64-bit word); b > 8 sends
the low byte of every code, then the high b - 8 bits packed as above. Always
``ceil(n * b / 8)`` bytes for ``b`` in 1..8 and ``n + ceil(n * (b - 8) / 8)`` above.
"""

from __future__ import annotations

import numpy as np
import torch

BLOCK = 1 << 16  # codes per packing block (a multiple of 8)


def packed_bytes(n: int, bits: int) -> int:
    if bits <= 8:
        return (n * bits + 7) // 8
    return n + packed_bytes(n, bits - 8)


def _pack_small(codes: torch.Tensor, bits: int) -> torch.Tensor:
    """codes: uint8 < 2**bits, bits <= 8."""
    n = codes.numel()
    if bits == 8:
        return codes
    group = 8 // bits if 8 % bits == 0 else 8
    pad = (-n) % group
    if pad:
        codes = torch.cat([codes, codes.new_zeros(pad)])
    if 8 % bits == 0:
        cols = codes.view(-1, group)
        out = cols[:, 0].clone(memory_format=torch.contiguous_format)
        for j in range(1, group):
            out |= cols[:, j] << (j * bits)
        return out[: packed_bytes(n, bits)]
    return torch.from_numpy(_pack_groups(codes.contiguous().numpy(), bits))[: packed_bytes(n, bits)]


def _pack_groups(codes, bits: int):
    """Each group of 8 codes (n a multiple of 8) -> one 64-bit word -> its low ``bits``
    bytes; in blocks of ``BLOCK`` codes so the words stay in cache."""
    n = codes.size
    out = np.empty(n // 8 * bits, dtype=np.uint8)
    groups = min(n, BLOCK) // 8
    word, tmp = np.empty(groups, dtype=np.uint64), np.empty(groups, dtype=np.uint64)
    for start in range(0, n, BLOCK):
        cols = codes[start:start + BLOCK].reshape(-1, 8)
        g = cols.shape[0]
        w, t = word[:g], tmp[:g]
        np.copyto(w, cols[:, 0])
        for j in range(1, 8):
            np.copyto(t, cols[:, j])
            np.left_shift(t, np.uint64(j * bits), out=t)
            np.bitwise_or(w, t, out=w)
        first = start // 8 * bits
        out[first:first + g * bits].reshape(g, bits)[:] = w.view(np.uint8).reshape(g, 8)[:, :bits]
    return out


def _unpack_small(packed: torch.Tensor, n: int, bits: int) -> torch.Tensor:
    if bits == 8:
        return packed[:n]
    mask = (1 << bits) - 1
    if 8 % bits == 0:
        group = 8 // bits
        need = (n + group - 1) // group
        src = packed[:need]
        out = torch.empty(need, group, dtype=torch.uint8)
        for j in range(group):
            torch.bitwise_and(src >> (j * bits), mask, out=out[:, j])
        return out.reshape(-1)[:n]
    groups = (n + 7) // 8
    full = torch.zeros(groups * 8, dtype=torch.uint8)
    full[: packed.numel()] = packed
    word = torch.zeros(groups, 8, dtype=torch.uint8)
    word[:, :bits] = full[: groups * bits].view(groups, bits)
    word = word.view(-1).view(torch.int64)
    out = torch.empty(groups, 8, dtype=torch.uint8)
    for j in range(8):
        out[:, j] = (word >> (j * bits)) & mask
    return out.reshape(-1)[:n]


def pack(codes: torch.Tensor, bits: int) -> torch.Tensor:
    """Pack integer codes in [0, 2**bits) into a uint8 tensor of ``packed_bytes`` bytes.

    ``codes`` is uint8 for bits <= 8 and int32 above.
    """
    if not 1 <= bits <= 16:
        raise ValueError(f"bits must be in 1..16, got {bits}")
    if bits <= 8:
        return _pack_small(codes.to(torch.uint8), bits)
    low = (codes & 0xFF).to(torch.uint8)
    high = (codes >> 8).to(torch.uint8)
    return torch.cat([low, _pack_small(high, bits - 8)])


def unpack(packed: torch.Tensor, n: int, bits: int) -> torch.Tensor:
    """Inverse of ``pack``: uint8 codes for bits <= 8, int32 codes above."""
    if packed.numel() != packed_bytes(n, bits):
        raise ValueError(f"expected {packed_bytes(n, bits)} packed bytes for {n} {bits}-bit codes, got {packed.numel()}")
    if bits <= 8:
        return _unpack_small(packed, n, bits)
    low = packed[:n].to(torch.int32)
    high = _unpack_small(packed[n:], n, bits - 8).to(torch.int32)
    return low | (high << 8)
