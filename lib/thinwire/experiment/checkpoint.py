"""A run's checkpoints: saved atomically every n steps (or every 60 s), loaded on rerun.

In one process the checkpoint is ``checkpoint.pt``. Under torch.distributed every rank
saves its own part (its agents, data streams and ledger) as
``checkpoint-rank{r}of{world}-step{s}.pt``, at the same steps on every rank (the runner
takes rank 0's decision, which travels with each step's metrics). A rank keeps its newest
two: a crash while some ranks are still writing step s leaves step s - n on all of them.
On rerun the ranks agree on the newest step that every one of them has (``common_step``)
and all resume from it; a run whose world size changed starts over.

A checkpoint is tensors and plain containers only, read with ``torch.load(weights_only=True)``:
a planted file cannot run code. One that cannot be read, or whose key or contents are not
this run's, is set aside as ``<name>.damaged`` with a warning naming it, and the run
resumes from the one before or from scratch.
"""

from __future__ import annotations

import re
import time
import warnings
from pathlib import Path

import numpy as np
import torch

from .result import atomic_write
from .warning import warn

KEEP = 2
FIELDS = ("key", "step", "rows", "algorithm", "streams", "ledger")


class DamagedCheckpoint(Exception):
    """A checkpoint that loaded but could not be applied to the run (``path`` names it)."""

    def __init__(self, path: Path | None, why: str):
        super().__init__(f"{path}: {why}" if path is not None else why)
        self.path = path


def set_aside(path: Path, why: str) -> None:
    """Rename a damaged checkpoint to ``<name>.damaged`` and warn, naming it."""
    target = path.with_name(path.name + ".damaged")
    try:
        path.replace(target)
    except FileNotFoundError:
        return
    warn(f"set aside the damaged checkpoint {path} as {target.name} ({why}); resuming from an earlier "
         "checkpoint or from scratch")


def _plain_ledger(arrays: dict) -> dict:
    """Ledger arrays as tensors and a list of names (loadable with weights_only=True)."""
    return {k: (list(map(str, v)) if k == "names" else torch.from_numpy(np.ascontiguousarray(v)))
            for k, v in arrays.items()}


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
        state = {"key": self.key, **state, "ledger": _plain_ledger(state["ledger"])}
        atomic_write(self.path(state["step"]), lambda f: torch.save(state, f))
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
        """The saved state (the newest, or the one at ``step``); None if there is none.
        A file that is not a readable checkpoint of this config is set aside."""
        steps = self.steps()
        if not steps:
            return None
        path = self.path(steps[-1] if step is None else step)
        if not path.exists():
            return None
        try:
            with warnings.catch_warnings():  # torch's note on the pickle protocol of a garbage file
                warnings.filterwarnings("ignore", message="Detected pickle protocol")
                state = torch.load(path, weights_only=True, map_location="cpu")
        except Exception as error:  # garbage, truncated, empty, or a pickle that is not plain data
            set_aside(path, f"unreadable: {type(error).__name__}")
            return None
        if not isinstance(state, dict) or state.get("key") != self.key:
            set_aside(path, "not a checkpoint of this config")
            return None
        missing = [f for f in FIELDS if f not in state]
        if missing or not isinstance(state["step"], int) or step is not None and state["step"] != step:
            set_aside(path, f"incomplete: missing {missing}" if missing else "wrong step")
            return None
        return state

    def remove(self) -> None:
        for step in self.steps():
            self.path(step).unlink(missing_ok=True)


def common_step(per_rank: list[list[int]]) -> int | None:
    """The newest step every rank has a checkpoint for, or None."""
    shared = set(per_rank[0]).intersection(*map(set, per_rank[1:])) if per_rank else set()
    return max(shared) if shared else None
