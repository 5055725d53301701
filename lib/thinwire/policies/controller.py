"""Policies that learn from what a run measures: observe signals, decide once per window.

A ``Controller`` is a ``Policy`` whose decision holds for a window of ``window`` rounds:
at the first question of each window it calls ``choose(round)`` once, and every tensor
asked about in that window gets that decision. Between questions, the algorithm reports
what it measured with ``observe(round, signals)`` (for example the window's mean loss and
its seconds); a learning controller updates its estimates there. MQGrad's SARSA agent
(Cui et al. 2018, Sec. 3: state, action = bit width, reward from the loss decrease and
the time) is one; the interface does not fix its state or reward.

Checkpoints hold the generator and ``memory`` (``Policy``), the window's decision, and the
weights of every network the controller keeps in ``modules`` (name -> ``nn.Module``), so
a resumed run chooses exactly as an uninterrupted one.
"""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import asdict

import torch
from torch import nn

from .base import Decision, Policy


class Controller(Policy):
    def __init__(self, window: int = 1, seed: int = 0):
        if not isinstance(window, int) or isinstance(window, bool) or window < 1:
            raise ValueError(f"window={window!r} is not allowed: window must be an int >= 1 (rounds per decision)")
        super().__init__(seed)
        self.window = window
        self.modules: dict[str, nn.Module] = {}
        self.choice: Decision | None = None
        self.chosen_window: int | None = None

    def params(self) -> dict:
        return {"window": self.window}

    @abstractmethod
    def choose(self, round: int) -> Decision:
        """The decision for the window that starts at ``round`` (called once per window)."""

    def observe(self, round: int, signals: dict[str, float]) -> None:
        """What the algorithm measured up to ``round`` (losses, seconds, bytes); a learning
        controller updates its estimates here. The base ignores them."""

    def decide(self, round: int, key: str, tensor: torch.Tensor) -> Decision:
        window = round // self.window
        if self.chosen_window != window:
            self.choice, self.chosen_window = self.choose(round), window
        return self.choice

    def state_dict(self) -> dict:
        return {**super().state_dict(), "chosen_window": self.chosen_window,
                "choice": None if self.choice is None else asdict(self.choice),
                "modules": {n: {k: v.clone() for k, v in m.state_dict().items()} for n, m in self.modules.items()}}

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        self.chosen_window = state["chosen_window"]
        self.choice = None if state["choice"] is None else Decision(**state["choice"])
        for name, module in self.modules.items():
            module.load_state_dict(state["modules"][name])
