"""Bit widths not learned: stand-ins for a learned controller (MQGrad's SARSA agent) in
tests and ablations. ``random_bits`` draws each tensor's width from a set, uniformly;
``shuffled_bits`` sends a learned schedule's widths in a random order."""

from __future__ import annotations

import math

import torch

from ..engine import check_bits
from .base import Decision, Policy
from .registry import register
from .controller import Controller
from .sarsa_bits import TRACE


@register
class RandomBits(Policy):
    name = "random_bits"

    def __init__(self, choices: tuple[int, ...] = (2, 4, 8), seed: int = 0):
        choices = tuple(choices)
        if not choices:
            raise ValueError("choices=() is not allowed: choices must name at least one bit width")
        for b in choices:
            check_bits("choices", b)
        super().__init__(seed)
        self.choices = choices

    def params(self) -> dict:
        return {"choices": self.choices}

    def decide(self, round, key, tensor) -> Decision:
        pick = int(torch.randint(len(self.choices), (1,), generator=self.generator))
        return Decision(bits=self.choices[pick])


@register
class ShuffledBits(Controller):
    """A learned schedule's bit widths in a random order: the control for whether a
    controller's timing matters (MQGrad's agent against the same bits, hence the same
    bytes, sent at random windows). ``bits``: one width per window, as the agent chose
    them; the permutation is drawn once from this policy's generator. Past the schedule's
    end the last width of the permuted order holds. ``memory["trace"]`` keeps
    ``sarsa_bits``' columns (the level and the bits sent; no reward, no Q) so the same
    figures read both."""

    name = "shuffled_bits"

    def __init__(self, bits: tuple[int, ...] = (2,), window: int = 5, seed: int = 0):
        bits = tuple(bits)
        if not bits:
            raise ValueError("bits=() is not allowed: bits must name at least one bit width (one per window)")
        for b in bits:
            check_bits("bits", b)
        super().__init__(window, seed)
        self.bits = bits
        order = torch.randperm(len(bits), generator=self.generator).tolist()
        self.memory.update(order=torch.tensor(order), decisions=torch.tensor(0),
                           trace=torch.zeros(0, len(TRACE), dtype=torch.float64))

    def params(self) -> dict:
        return {"bits": self.bits, "window": self.window}

    def choose(self, round: int) -> Decision:
        m = self.memory
        t = min(int(m["decisions"]), len(self.bits) - 1)
        bits = self.bits[int(m["order"][t])]
        m["decisions"] = m["decisions"] + 1
        row = [round, bits, bits] + [math.nan] * (len(TRACE) - 3)
        m["trace"] = torch.cat([m["trace"], torch.tensor([row], dtype=torch.float64)])
        return Decision(bits=bits)
