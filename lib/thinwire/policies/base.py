"""Policies decide what an agent sends this round; codecs decide how it is written.

A policy is asked once per (round, tensor) by the agent that would send it. Its
``Decision`` says whether to send at all, and may fix a bit width or the keys (coordinates)
to send. ``send=False`` means no message exists: nothing is encoded, sent or ledgered.
Each policy owns a ``torch.Generator`` seeded at construction and saves it, with its
other state, in ``state_dict`` (checkpoints). Policies for EventGraD's events, MQGrad's
SARSA bit widths and Slim-DP's core and explorer keys are subclasses of ``Policy``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar

import torch


@dataclass
class Decision:
    send: bool = True
    bits: int | None = None              # bit width for a codec that takes one per message
    levels: int | None = None            # quantization levels when not 2^bits (2^(bits-1) < levels < 2^bits)
    keys: torch.Tensor | None = None     # coordinates to send, for a keyed codec (Slim-DP: the explorer)
    core: torch.Tensor | None = None     # Slim-DP: the core's keys, cached on both ends between refreshes
    refresh: bool = False                # Slim-DP: the core was chosen anew this round (its keys travel)
    entropy: float | None = None         # what the decision was based on, for statistics


class Policy(ABC):
    """Base: a seeded generator and a state dict of tensors (``self.memory``)."""

    name: ClassVar[str]

    def __init__(self, seed: int = 0):
        if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
            raise ValueError(f"seed={seed!r} is not allowed: seed must be an int >= 0")
        self.seed = seed
        self.generator = torch.Generator().manual_seed(seed)
        self.memory: dict[str, torch.Tensor] = {}

    def params(self) -> dict:
        return {}

    def spec(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params().items())
        return f"{self.name}({args})"

    def __repr__(self) -> str:
        return self.spec()

    @abstractmethod
    def decide(self, round: int, key: str, tensor: torch.Tensor) -> Decision:
        """What to send of ``tensor`` (the tensor named ``key``) in round ``round``."""

    def warm_up(self) -> None:
        """Decide once for a small tensor on a fresh copy of this policy (this one's state and
        generator untouched), so that the compiled kernels it uses are loaded before anything
        is timed."""
        type(self)(**self.params(), seed=0).decide(0, "warm_up", torch.linspace(-1.0, 1.0, 1024))

    def sent(self, round: int, key: str, tensor: torch.Tensor, decision: Decision | None = None) -> None:
        """Told after a message for ``key`` went out, with the decision it was sent under
        (event policies remember what was sent; where ``decision.keys`` chose coordinates,
        only those went out)."""

    def state_dict(self) -> dict:
        return {"seed": self.seed, "generator": self.generator.get_state(),
                "memory": {k: t.clone() for k, t in self.memory.items()}}

    def load_state_dict(self, state: dict) -> None:
        self.seed = state["seed"]
        self.generator.set_state(state["generator"])
        self.memory = {k: t.clone() for k, t in state["memory"].items()}
