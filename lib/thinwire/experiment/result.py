"""A run's outcome: per-step metrics, a summary, and the ledger; stored atomically."""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..comm import Ledger
from .config import RunConfig
from .measures import traffic
from .timing import median_after_warmup


@dataclass
class Result:
    config: RunConfig
    backend: str
    metrics: dict[str, list]      # one entry per step: step, epoch, loss, ..., comm_seconds
    summary: dict[str, float]
    ledger: Ledger
    provenance: dict = field(default_factory=dict)  # where and when the times were taken (timing.py)
    # where it is saved, and whether ``run`` took it from there instead of training (not saved)
    folder: Path | None = field(default=None, compare=False)
    reused: bool = field(default=False, compare=False)

    @property
    def steps(self) -> int:
        """The steps run: ``config.steps``, or fewer when the algorithm ended the run early."""
        return len(self.metrics["loss"])

    def seconds(self, name: str = "compute_seconds", start: int = 0) -> float:
        """A timed metric (``compute_seconds``, ``codec_seconds``, ``wall_seconds``) for the
        steps from ``start`` on: their number times the median step after a warm-up."""
        return (self.steps - start) * median_after_warmup(self.metrics[name], start)

    def phase(self, name: str, start: int = 0):
        """``Traffic`` (bytes, payload, framing, messages) of phase ``name`` from step ``start``
        on; ``KeyError`` naming the phases this result has."""
        if name not in self.phases():
            raise KeyError(f"phase={name!r}: this result's phases are {self.phases()}")
        return traffic(self, f"{name}_", start)

    def role(self, name: str, start: int = 0):
        """``Traffic`` sent by the agents of role ``name`` (``worker``, ``server``, ``peer``)."""
        if f"{name}_sent_messages" not in self.metrics:
            roles = sorted(k[: -len("_sent_messages")] for k in self.metrics if k.endswith("_sent_messages"))
            raise KeyError(f"role={name!r}: this result's roles are {roles}")
        return traffic(self, f"{name}_sent_", start)

    def total(self, start: int = 0):
        """``Traffic`` of every phase together."""
        return traffic(self, "", start)

    def phases(self) -> list[str]:
        return sorted(k[: -len("_messages")] for k in self.metrics
                      if k.endswith("_messages") and not k.endswith("_sent_messages") and k != "messages")

    def frame(self):
        """Per-step metrics as a pandas DataFrame."""
        import pandas as pd
        return pd.DataFrame(self.metrics)

    def save(self, folder: Path) -> None:
        """Write ledger.npz then result.json, each through a temporary file and rename;
        result.json appears last, so its presence means the run is complete."""
        folder.mkdir(parents=True, exist_ok=True)
        atomic_write(folder / "ledger.npz", lambda f: np.savez_compressed(f, **self.ledger.to_arrays()))
        doc = {"config": self.config.to_dict(), "backend": self.backend, "metrics": self.metrics,
               "summary": self.summary, "provenance": self.provenance}
        atomic_write(folder / "result.json", lambda f: f.write(json.dumps(doc, allow_nan=False).encode()))

    @classmethod
    def load(cls, folder: Path) -> Result:
        """The result saved in ``folder``; DamagedResult naming the file that cannot be read."""
        path = folder / "result.json"
        try:
            doc = json.loads(path.read_text())
            result = (RunConfig.from_dict(doc["config"]), doc["backend"], doc["metrics"], doc["summary"])
            provenance = doc.get("provenance", {})
        except Exception as error:
            raise DamagedResult(path, error) from error
        path = folder / "ledger.npz"
        try:
            # the file opened here: numpy leaves its own open when the archive is damaged
            with open(path, "rb") as file, np.load(file, allow_pickle=False) as arrays:
                ledger = Ledger.from_arrays(arrays)
        except Exception as error:
            raise DamagedResult(path, error) from error
        return cls(*result, ledger, provenance)


class DamagedResult(Exception):
    """A results file that exists but cannot be read."""

    def __init__(self, path: Path, error: Exception):
        super().__init__(f"cannot read {path}: {type(error).__name__}: {error}")
        self.path = path


def atomic_write(path: Path, write) -> None:
    """Write through ``.<name>.<host>.<pid>.<random>.tmp`` and rename: readers see the old file or
    the new one, never half of one; the writer's host and pid tell a cleaner whether the
    temporary is abandoned."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.{_HOST}.{os.getpid()}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


STALE_AFTER_S = 60.0
_HOST = __import__("socket").gethostname().replace(".", "_") or "host"


def _writer_alive(path: Path) -> bool | None:
    """Whether the process that writes temporary ``path`` is alive (None: unknown, e.g.
    another host's, or an older name without host and pid)."""
    parts = path.name.split(".")
    if len(parts) < 6 or parts[-4] != _HOST or not parts[-3].isdigit():
        return None
    try:
        os.kill(int(parts[-3]), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale_temporaries(folder: Path, older_than_s: float = STALE_AFTER_S) -> list[Path]:
    """Delete the temporary files an interrupted ``atomic_write`` left in ``folder``
    (``.<name>.<host>.<pid>.<random>.tmp``): at once when their writer on this host is gone,
    else (another host's, or an unknown writer) when older than ``older_than_s``, since a
    file being written is kept fresh by its writer."""
    import time
    removed = []
    if not folder.is_dir():
        return removed
    now = time.time()
    for path in folder.glob(".*.tmp"):
        try:
            alive = _writer_alive(path)
            if alive is False or (alive is None and now - path.stat().st_mtime > older_than_s):
                path.unlink()
                removed.append(path)
        except FileNotFoundError:
            pass
    return removed
