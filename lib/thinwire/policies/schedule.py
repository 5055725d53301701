"""Bit widths drawn from a set, uniformly, with the policy's own generator: a stand-in
for a learned controller (MQGrad's SARSA agent) in tests and ablations."""

from __future__ import annotations

import torch

from ..codecs.quantize.bin_quantize import check_bits
from .base import Decision, Policy


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
