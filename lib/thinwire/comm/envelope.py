"""A message in flight: who sends it, to whom, which tensor, and its bytes."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..engine import wire


@dataclass(frozen=True)
class Envelope:
    sender: int
    receiver: int
    tensor: str
    message: bytearray | torch.Tensor  # host bytes, or a uint8 tensor (``wire/tensor_message.py``)

    @property
    def nbytes(self) -> int:
        """Bytes on the wire: the whole message."""
        return len(self.message)

    @property
    def payload_nbytes(self) -> int:
        """The payload part of ``nbytes`` (``wire.measure``); the rest is framing."""
        return wire.measure(self.message)[0]

    def sort_key(self) -> tuple[int, int, str]:
        return (self.receiver, self.sender, self.tensor)
