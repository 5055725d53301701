"""Send a tensor only when it has moved: ||x - x_sent|| > threshold * ||x_sent|| (an event).

The rule behind EventGraD (a tensor is sent when its norm has moved past a threshold);
EventGraD's adaptive threshold is a subclass that changes ``threshold`` from its history.
The first round always sends (nothing was sent before). ``sent`` remembers what went out.
"""

from __future__ import annotations

import torch

from .base import Decision, Policy


class EventTrigger(Policy):
    name = "event"

    def __init__(self, threshold: float = 0.1, seed: int = 0):
        if not isinstance(threshold, (int, float)) or isinstance(threshold, bool) or threshold < 0:
            raise ValueError(f"threshold={threshold!r} is not allowed: threshold must be a number >= 0")
        super().__init__(seed)
        self.threshold = float(threshold)

    def params(self) -> dict:
        return {"threshold": self.threshold}

    def decide(self, round, key, tensor) -> Decision:
        last = self.memory.get(key)
        if last is None:
            return Decision()
        moved = float(torch.linalg.vector_norm((tensor - last).double()))
        return Decision(send=moved > self.threshold * float(torch.linalg.vector_norm(last.double())))

    def sent(self, round, key, tensor) -> None:
        self.memory[key] = tensor.detach().clone()
