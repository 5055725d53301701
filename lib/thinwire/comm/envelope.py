"""A message in flight: who sends it, to whom, which tensor, and its bytes."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Envelope:
    sender: int
    receiver: int
    tensor: str
    message: bytearray

    @property
    def nbytes(self) -> int:
        return len(self.message)

    def sort_key(self) -> tuple[int, int, str]:
        return (self.receiver, self.sender, self.tensor)
