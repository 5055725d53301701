"""Send each tensor with probability ``p``, drawn from the policy's own generator: a
trigger that knows nothing about the tensor. At the same share of messages as an event
trigger it separates what the share costs from what the trigger's choice of moments adds
(the EventGraD notebook's ablation). ``forced`` first rounds always send, as EventGraD's do."""

from __future__ import annotations

import torch

from .base import Decision, Policy
from .registry import register


@register
class RandomSend(Policy):
    name = "random_send"

    def __init__(self, p: float = 0.5, forced: int = 0, seed: int = 0):
        if not isinstance(p, (int, float)) or isinstance(p, bool) or not 0 <= p <= 1:
            raise ValueError(f"p={p!r} is not allowed: p must be a probability in [0, 1]")
        if not isinstance(forced, int) or isinstance(forced, bool) or forced < 0:
            raise ValueError(f"forced={forced!r} is not allowed: forced must be an int >= 0")
        super().__init__(seed)
        self.p, self.forced = float(p), forced

    def params(self) -> dict:
        return {"p": self.p, "forced": self.forced}

    def decide(self, round, key, tensor) -> Decision:
        draw = float(torch.rand(1, generator=self.generator))  # drawn every round: the stream does not depend on sends
        return Decision(send=round < self.forced or draw < self.p)
