"""A run's checkpoints: saved atomically every n steps (or every 60 s), loaded on rerun.

In one process the checkpoint is ``checkpoint.pt``. Under torch.distributed every rank
saves its own part (its agents, data streams and ledger) as
``checkpoint-rank{r}of{world}-step{s}.pt``, at the same steps on every rank (the runner
takes rank 0's decision, which travels with each step's metrics). A rank keeps its newest
two: a crash while some ranks are still writing step s leaves step s - n on all of them.
On rerun the ranks agree on the newest step that every one of them has (``common_step``)
and all resume from it; a run whose world size changed starts over.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import torch

from .result import atomic_write

KEEP = 2


def check_every(every_steps) -> int:
    """``every_steps`` (``checkpoint_every``), or a ``ValueError`` naming it."""
    if isinstance(every_steps, bool) or not isinstance(every_steps, int) or every_steps < 0:
        raise ValueError(f"checkpoint_every={every_steps!r} is not allowed: it must be an int >= 0 (0: every 60 s)")
    return every_steps


class Checkpoint:
    def __init__(self, folder: Path, key: str, every_steps: int = 0, every_seconds: float = 60.0,
                 rank: int = 0, world_size: int = 1):
        check_every(every_steps)
        self.folder, self.key = Path(folder), key
        self.every_steps, self.every_seconds = every_steps, every_seconds
        self.rank, self.world_size = rank, world_size
        self._last = time.monotonic()
        self._pattern = re.compile(rf"checkpoint-rank{rank}of{world_size}-step(\d+)\.pt")

    @property
    def distributed(self) -> bool:
        return self.world_size > 1

    def path(self, step: int) -> Path:
        if not self.distributed:
            return self.folder / "checkpoint.pt"
        return self.folder / f"checkpoint-rank{self.rank}of{self.world_size}-step{step}.pt"

    def due(self, steps_done: int) -> bool:
        if self.every_steps:
            return steps_done % self.every_steps == 0
        return time.monotonic() - self._last >= self.every_seconds

    def save(self, state: dict) -> None:
        """Write ``state`` (which holds ``step``, the steps done) and drop older saves."""
        self.folder.mkdir(parents=True, exist_ok=True)
        atomic_write(self.path(state["step"]), lambda f: torch.save({"key": self.key, **state}, f))
        self._last = time.monotonic()
        for old in self.steps()[:-KEEP]:
            self.path(old).unlink(missing_ok=True)

    def steps(self) -> list[int]:
        """The steps this rank has a checkpoint for, oldest first."""
        if not self.distributed:
            return [0] if self.path(0).exists() else []
        if not self.folder.exists():
            return []
        found = (self._pattern.fullmatch(p.name) for p in self.folder.iterdir())
        return sorted(int(m.group(1)) for m in found if m)

    def load(self, step: int | None = None) -> dict | None:
        """The saved state (the newest, or the one at ``step``); None if there is none or
        it belongs to another config."""
        steps = self.steps()
        if not steps:
            return None
        path = self.path(steps[-1] if step is None else step)
        if not path.exists():
            return None
        state = torch.load(path, weights_only=False)
        return state if state.get("key") == self.key else None

    def remove(self) -> None:
        for step in self.steps():
            self.path(step).unlink(missing_ok=True)


def common_step(per_rank: list[list[int]]) -> int | None:
    """The newest step every rank has a checkpoint for, or None."""
    shared = set(per_rank[0]).intersection(*map(set, per_rank[1:])) if per_rank else set()
    return max(shared) if shared else None
