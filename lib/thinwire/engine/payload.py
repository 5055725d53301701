"""The parts a codec produces before they are laid out as bytes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import torch

from .errors import CorruptMessageError

FLOAT32_MAX = float(torch.finfo(torch.float32).max)


@dataclass
class PartWriter:
    """A part written straight into the message buffer by ``fill(view)``: large
    outputs (quantization codes) then skip an intermediate copy. ``checksummed``: ``fill``
    returns the CRC-32C of the bytes it wrote, or None where it did not compute it."""

    dtype: torch.dtype
    numel: int
    fill: Callable[[torch.Tensor], int | None]
    checksummed: bool = False

    def materialize(self) -> torch.Tensor:
        out = torch.empty(self.numel, dtype=self.dtype)
        self.fill(out)
        return out


@dataclass
class Payload:
    """Named tensors (``parts``) plus a few scalars (``meta``) that a codec sends.

    ``wire.pack`` lays the parts out as raw bytes; the byte count of a message is the
    length of that buffer, never a formula over these fields.
    """

    parts: dict[str, torch.Tensor | PartWriter] = field(default_factory=dict)
    meta: dict[str, float | int | str] = field(default_factory=dict)
    # the message the parts are views of, while its checksum is still unverified (a host
    # message, or ``tensor_message.Unverified``): a codec that ``checks_own_copy`` verifies
    # it as it copies its part (``wire.copy_part``)
    unverified: object | None = None

    def materialize(self) -> Payload:
        """Turn every ``PartWriter`` into a tensor (in place); returns self."""
        for name, part in self.parts.items():
            if isinstance(part, PartWriter):
                self.parts[name] = part.materialize()
        return self

    def split(self, prefix: str) -> Payload:
        """Remove and return the parts and meta whose names start with ``prefix + '.'``."""
        head = prefix + "."
        inner = Payload()
        for name in [n for n in self.parts if n.startswith(head)]:
            inner.parts[name[len(head):]] = self.parts.pop(name)
        for name in [n for n in self.meta if n.startswith(head)]:
            inner.meta[name[len(head):]] = self.meta.pop(name)
        return inner

    def merge(self, prefix: str, inner: Payload) -> None:
        """Add ``inner``'s parts and meta under ``prefix + '.'`` (inverse of ``split``)."""
        for name, part in inner.parts.items():
            self.parts[f"{prefix}.{name}"] = part
        for name, value in inner.meta.items():
            self.meta[f"{prefix}.{name}"] = value


def expect_part(payload: Payload, name: str, dtype: torch.dtype, numel: int | None = None) -> torch.Tensor:
    """The part ``name`` with the given dtype (and size), or ``CorruptMessageError``."""
    part = payload.parts.get(name)
    if part is None or part.dtype != dtype or (numel is not None and part.numel() != numel):
        got = None if part is None else (part.dtype, part.numel())
        raise CorruptMessageError(f"part {name!r}: expected {dtype} x {numel}, got {got}")
    return part


def expect_range(payload: Payload, codec: str) -> tuple[float, float]:
    """The (lo, hi) meta of a quantized message: finite float32 values with lo <= hi
    (what every encoder sends), or ``CorruptMessageError``."""
    lo, hi = payload.meta.get("lo"), payload.meta.get("hi")
    if not (isinstance(lo, (int, float)) and isinstance(hi, (int, float))
            and -FLOAT32_MAX <= lo <= hi <= FLOAT32_MAX):
        raise CorruptMessageError(f"{codec}: range [{lo}, {hi}] is not a finite float32 interval")
    return float(lo), float(hi)
