"""All of a model's parameters as one flat vector, cut into shards (Dean et al. 2012
parameter sharding, as used by Aji & Heafield 2017, Sec. 3).

Each tensor enters the vector in its memory order: a Linear weight that the batched
replicas store as (in, out) rows becomes the matrix W of y = x W, the convention of the
papers' toolkits, so "column j" is output unit j. Copies between the vector and the
replicas are then straight memory copies. Shard cut points are moved to the nearest row
boundary, so every piece of a matrix inside a shard holds whole rows and its columns
are well defined.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Piece:
    name: str
    offset: int
    numel: int
    perm: tuple[int, ...]     # logical dims in memory order (outermost first)
    stored: tuple[int, ...]   # the logical shape permuted by ``perm``

    @property
    def columns(self) -> int:
        return self.stored[-1] if len(self.stored) >= 2 else 1

    @property
    def inverse(self) -> tuple[int, ...]:
        return tuple(sorted(range(len(self.perm)), key=self.perm.__getitem__))


class FlatLayout:
    def __init__(self, like: dict[str, torch.Tensor]):
        """``like``: one tensor per parameter, in the layout gradients and replicas use."""
        self.pieces: list[Piece] = []
        offset = 0
        for name, t in like.items():
            perm = tuple(sorted(range(t.dim()), key=lambda d: (-t.stride(d), d)))
            stored = tuple(t.shape[d] for d in perm)
            self.pieces.append(Piece(name, offset, t.numel(), perm, stored))
            offset += t.numel()
        self.numel = offset

    def flatten(self, tensors: dict[str, torch.Tensor], out: torch.Tensor | None = None) -> torch.Tensor:
        if out is None:
            out = torch.empty(self.numel, dtype=torch.float32, device=next(iter(tensors.values())).device)
        for p in self.pieces:
            out[p.offset:p.offset + p.numel].view(p.stored).copy_(tensors[p.name].permute(p.perm))
        return out

    def views(self, flat: torch.Tensor) -> dict[str, torch.Tensor]:
        """Logical-shape views of ``flat`` (no copy)."""
        return {p.name: flat[p.offset:p.offset + p.numel].view(p.stored).permute(p.inverse) for p in self.pieces}

    def shard_bounds(self, shards: int) -> list[tuple[int, int]]:
        """``shards`` contiguous [lo, hi) ranges of near-equal size, cut at row boundaries."""
        cuts = [0]
        for j in range(1, shards):
            cuts.append(max(cuts[-1], self._row_boundary(j * self.numel // shards)))
        cuts.append(self.numel)
        return list(zip(cuts[:-1], cuts[1:]))

    def _row_boundary(self, at: int) -> int:
        for p in self.pieces:
            if p.offset <= at < p.offset + p.numel:
                row = p.columns
                return p.offset + round((at - p.offset) / row) * row
        return at

    def segments(self, lo: int, hi: int) -> list[tuple[int, int, int]]:
        """The parameter matrices inside [lo, hi): rows of (start - lo, numel, columns)."""
        rows = []
        for p in self.pieces:
            a, b = max(lo, p.offset), min(hi, p.offset + p.numel)
            if a < b:
                rows.append((a - lo, b - a, p.columns))
        return rows
