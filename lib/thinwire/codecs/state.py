"""Per-endpoint codec state: residuals, caches and the endpoint's own random generator."""

from __future__ import annotations

import torch

from .stats import SendStats


class CodecState:
    """State one endpoint (a sender or a receiver) keeps across messages.

    Internal state is grouped by tensor key (``slot(key)``), so one state object serves
    every tensor of a model. It owns its ``torch.Generator``: no codec reads the global RNG.
    ``state_dict`` / ``load_state_dict`` save and restore everything, generator included.
    """

    def __init__(self, seed: int = 0):
        if not isinstance(seed, int) or seed < 0:
            raise ValueError(f"seed must be a non-negative int, got {seed!r}")
        self.seed = seed
        self.generator = torch.Generator().manual_seed(seed)
        self.slots: dict[str, dict[str, torch.Tensor]] = {}
        self.last = SendStats()  # statistics of the last encode (not checkpointed)
        self.scratch: dict = {}  # buffers a codec reuses between messages, holding no state (not checkpointed)

    def slot(self, key: str) -> dict[str, torch.Tensor]:
        """The mutable dict of tensors kept for ``key``."""
        return self.slots.setdefault(key, {})

    def set_segments(self, key: str, segments: list[tuple[int, int, int]]) -> None:
        """Describe the parameter matrices inside messages ``key`` — rows of (start, numel,
        columns) — for codecs that treat them apart (per-matrix thresholds, column means)."""
        self.slot(key)["segments"] = torch.tensor(segments, dtype=torch.int64).reshape(-1, 3)

    def segments(self, key: str) -> torch.Tensor | None:
        return self.slots.get(key, {}).get("segments")

    def state_dict(self) -> dict:
        return {
            "seed": self.seed,
            "generator": self.generator.get_state(),
            "slots": {k: {n: t.clone() for n, t in s.items()} for k, s in self.slots.items()},
        }

    def load_state_dict(self, state: dict) -> None:
        self.seed = state["seed"]
        self.generator.set_state(state["generator"])
        self.slots = {k: {n: t.clone() for n, t in s.items()} for k, s in state["slots"].items()}
