"""A run's checkpoint: saved atomically every n steps (or every 60 s), loaded on rerun."""

from __future__ import annotations

import time
from pathlib import Path

import torch

from .result import atomic_write


class Checkpoint:
    def __init__(self, path: Path, key: str, every_steps: int = 0, every_seconds: float = 60.0):
        if every_steps < 0:
            raise ValueError(f"checkpoint_every must be >= 0, got {every_steps}")
        self.path, self.key = path, key
        self.every_steps, self.every_seconds = every_steps, every_seconds
        self._last = time.monotonic()

    def due(self, steps_done: int) -> bool:
        if self.every_steps:
            return steps_done % self.every_steps == 0
        return time.monotonic() - self._last >= self.every_seconds

    def save(self, state: dict) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(self.path, lambda f: torch.save({"key": self.key, **state}, f))
        self._last = time.monotonic()

    def load(self) -> dict | None:
        if not self.path.exists():
            return None
        state = torch.load(self.path, weights_only=False)
        return state if state.get("key") == self.key else None

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)
