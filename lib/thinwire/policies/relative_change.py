"""Send a tensor only when it has moved relative to what was last sent:
||x - x_sent|| > threshold * ||x_sent||.

A change-triggered send with a fixed, relative threshold. It is not EventGraD's trigger:
EventGraD compares the norms themselves, |‖x‖ - ‖x_sent‖|, with a threshold it adapts from
the history of those norms; that is a policy of its own. The first round always sends
(nothing was sent before). ``sent`` remembers what went out: the whole tensor, or only the
coordinates a keyed decision sent.
"""

from __future__ import annotations

import torch

from .base import Decision, Policy
from .registry import register


@register
class RelativeChange(Policy):
    name = "relative_change"

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

    def sent(self, round, key, tensor, decision: Decision | None = None) -> None:
        keys = None if decision is None else decision.keys
        if keys is None or key not in self.memory:
            self.memory[key] = tensor.detach().clone()
        else:  # only the keyed coordinates went out: the receiver holds the old values elsewhere
            self.memory[key].view(-1)[keys] = tensor.detach().reshape(-1)[keys]
