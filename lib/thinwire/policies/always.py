"""Send every tensor every round, as it is (Plump-DP; the default policy)."""

from __future__ import annotations

from .base import Decision, Policy
from .registry import register


@register
class Always(Policy):
    name = "always"

    def decide(self, round, key, tensor) -> Decision:
        return Decision()
