"""Time figures of a run: medians of the steps after a warm-up, with provenance.

One sample of a step's time says little: the first steps load compiled kernels and warm
caches, and a busy machine adds outliers. A run's time figures are therefore the median of
its per-step times after ``warmup_steps(steps)`` (a tenth of the run, at least one step and
at most 20, none for a one-step run), scaled to the steps they stand for. A time spent on
some steps only (a codec's, when workers exchange every H steps) takes the median of the
steps that spent it, times their share: its cost per exchange averaged over the steps. The per-step
samples stay in ``Result.metrics`` for whoever wants the spread.

``provenance()`` says where and when the times were taken (thinwire version and git commit,
CPU, torch and numba versions, thread counts, date, load average at the start). Bytes and
accuracies do not depend on it; ``retime`` in ``runner.py`` takes the times again for a
cached run without touching them.
"""

from __future__ import annotations

import datetime
import functools
import os
import platform
import subprocess
from pathlib import Path

import numpy as np

from ..engine import team

MODELLED = ("comm_seconds",)   # the network model over the ledger: computed, not measured
MAX_WARMUP = 20


def is_measured(name: str) -> bool:
    """Whether metric ``name`` is a measured time (every ``*_seconds`` but the modelled):
    the compute, codec (by side and part), exchange and wall seconds of each step."""
    return name.endswith("_seconds") and name not in MODELLED


def untimed(metrics: dict) -> dict:
    """``metrics`` without its measured times: what a rerun must reproduce exactly."""
    return {k: v for k, v in metrics.items() if not is_measured(k)}


def warmup_steps(steps: int) -> int:
    """Steps left out of the medians: a tenth of the run, 1 to 20, none for one step."""
    return 0 if steps <= 1 else min(MAX_WARMUP, max(1, steps // 10))


def median_after_warmup(values, start: int = 0) -> float:
    """Seconds per step of ``values[start:]`` after that slice's warm-up (0.0 when empty):
    the median of the steps that spent any time, times their share of the steps. A time
    spent every step is its median; one spent on some steps only (an exchange every H
    steps) is its median per busy step averaged over all, not the median step's 0."""
    tail = [v for v in values[start:] if v is not None]
    tail = tail[warmup_steps(len(tail)):]
    busy = [v for v in tail if v > 0]
    return float(np.median(busy)) * len(busy) / len(tail) if busy else 0.0


def median_when_busy(values, start: int = 0) -> float:
    """Median seconds of the steps after the warm-up that spent any time (0.0 if none):
    what one exchange costs, for a time spent on some steps only."""
    tail = [v for v in values[start:] if v is not None]
    busy = [v for v in tail[warmup_steps(len(tail)):] if v > 0]
    return float(np.median(busy)) if busy else 0.0


def step_medians(metrics: dict, start: int = 0) -> dict[str, float]:
    """``<name>_per_step``: the median seconds per step of each measured time."""
    return {f"{name}_per_step": median_after_warmup(metrics[name], start) for name in metrics if is_measured(name)}


# What executions write, not the code they run: the executed notebooks' folders (papermill
# writes reports/<name>.ipynb as it goes, which must not mark its own runs "+dirty") and the
# benchmarks' kept results (make bench writes one before the next part names its commit)
EXECUTED = ("reports", "long-runs", "gpu-runs", "tests/golden", "benchmarks/*.json")


def _git_commit(root: Path | None = None) -> str | None:
    """The checkout's commit, with "+dirty" when tracked code differs from it (``EXECUTED``
    folders aside); None outside a checkout."""
    root = root or Path(__file__).resolve().parents[3]
    try:
        out = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                             timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no", "--", ".",
                            *(f":!{folder}" for folder in EXECUTED)],
                           capture_output=True, text=True, timeout=5).stdout.strip()
    return out.stdout.strip() + ("+dirty" if dirty else "")


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


@functools.lru_cache(maxsize=None)
def _fixed() -> dict:
    """What does not change within a process: code version, machine, libraries."""
    import numba
    import torch

    from .. import __version__
    return {
        "thinwire": __version__,
        "git_commit": _git_commit(),
        "host_cpu": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "numba": numba.__version__,
    }


def provenance() -> dict:
    """Where, when and with what a run's times were measured."""
    import numba
    import torch
    return {
        **_fixed(),
        "torch_threads": torch.get_num_threads(),
        "numba_threads": numba.config.NUMBA_NUM_THREADS,  # the pool's size (engine/kernels/team.py)
        "kernel_threads": os.environ.get(team.SETTING, "auto"),  # the kernels' team (engine/kernels/team.py)
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
    }


def _results(obj):
    """Every Result in a (nested) dict, list or tuple."""
    from .result import Result
    if isinstance(obj, Result):
        yield obj
    elif isinstance(obj, dict):
        for value in obj.values():
            yield from _results(value)
    elif isinstance(obj, (list, tuple)):
        for value in obj:
            yield from _results(value)


def provenance_table(results):
    """Where and when the times of ``results`` (a Result or nested dicts and lists of them)
    were taken: one row per distinct machine and code version, with how many runs, the
    dates and the highest 1-minute load average at a run's start (pandas DataFrame).
    In a notebook it also records the scrap ``provenance``: the commit the notebook runs at
    and each run's (``python -m thinwire readme --check`` refuses a report executed from an
    uncommitted tree, or whose runs came from another commit)."""
    import pandas as pd
    _glue_provenance(list(_results(results)))
    groups: dict = {}
    for r in _results(results):
        p = r.provenance or {}
        key = tuple(p.get(k) for k in ("host_cpu", "cpu_count", "git_commit", "thinwire", "torch", "numba",
                                       "torch_threads", "numba_threads", "kernel_threads"))
        group = groups.setdefault(key, {"runs": 0, "dates": [], "load": []})
        group["runs"] += 1
        if p.get("date"):
            group["dates"].append(p["date"])
        if p.get("load_average"):
            group["load"].append(p["load_average"][0])
    rows = [{"CPU": k[0] or "(recorded before provenance)", "cores": k[1], "commit": (k[2] or "")[:12] + ("+dirty" if (k[2] or "").endswith("+dirty") else ""),
             "thinwire": k[3], "torch": k[4], "numba": k[5], "threads torch/numba": f"{k[6]}/{k[7]}" + (f" (team {k[8]})" if k[8] else ""),
             "runs": g["runs"], "first": min(g["dates"], default=None), "last": max(g["dates"], default=None),
             "max load at start": max(g["load"], default=None)} for k, g in groups.items()]
    return pd.DataFrame(rows)


def _glue_provenance(results: list) -> None:
    """The scrap ``provenance`` (``{"executed_at": commit, "runs": {commit: count}}``),
    when a notebook's kernel runs this."""
    try:
        from IPython import get_ipython
    except ImportError:
        return
    if get_ipython() is None:
        return
    from ..scraps import glue
    runs: dict[str, int] = {}
    for r in results:
        commit = str((r.provenance or {}).get("git_commit"))
        runs[commit] = runs.get(commit, 0) + 1
    glue("provenance", {"executed_at": _fixed()["git_commit"], "runs": runs})
