"""Shared figure helpers for the notebooks."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np


def modelled_time(result) -> np.ndarray:
    """Cumulative modelled seconds: the median measured compute per step (after a warm-up,
    ``experiment/timing.py``) + the modelled communication of each step."""
    steps = len(result.metrics["comm_seconds"])
    per_step = result.seconds("compute_seconds") / max(1, result.config.steps)
    return per_step * np.arange(1, steps + 1) + np.cumsum(result.metrics["comm_seconds"])


def _series(result, y: str):
    values = np.array([np.nan if v is None else v for v in result.metrics[y]], dtype=float)
    keep = ~np.isnan(values)
    return keep, values


def curves(results: dict, y: str, x: str = "step", ax=None, ylabel: str | None = None):
    """One line per labelled result: metric ``y`` against ``step`` or modelled ``time``."""
    ax = ax or plt.gca()
    for label, result in results.items():
        keep, values = _series(result, y)
        xs = np.asarray(result.metrics["step"]) + 1 if x == "step" else modelled_time(result)
        ax.plot(xs[keep], values[keep], label=label, marker="o" if keep.sum() < 30 else None, ms=3)
    ax.set_xlabel("step" if x == "step" else "modelled time (s)")
    ax.set_ylabel(ylabel or y)
    ax.grid(alpha=0.3)
    return ax


def band(runs: dict, y: str, x: str = "step", ax=None, ylabel: str | None = None):
    """One line per label, the mean over its runs (seeds) of metric ``y``, and a band from
    their minimum to their maximum; ``x`` is ``step`` or modelled ``time`` (mean over runs)."""
    ax = ax or plt.gca()
    for label, results in runs.items():
        keep, _ = _series(results[0], y)
        values = np.stack([_series(r, y)[1][keep] for r in results])
        xs = (np.asarray(results[0].metrics["step"]) + 1 if x == "step"
              else np.mean([modelled_time(r) for r in results], axis=0))[keep]
        line, = ax.plot(xs, values.mean(0), label=label, marker="o" if keep.sum() < 30 else None, ms=3)
        if len(results) > 1:
            ax.fill_between(xs, values.min(0), values.max(0), color=line.get_color(), alpha=0.2, lw=0)
    ax.set_xlabel("step" if x == "step" else "modelled time (s)")
    ax.set_ylabel(ylabel or y)
    ax.grid(alpha=0.3)
    return ax


def figure_folder(profile: str) -> Path:
    """Where a notebook run at ``profile`` saves its figures: ``$THINWIRE_FIGURES`` when
    set; a fresh temporary folder at the smoke profile (CI and nbval runs leave nothing in
    reports/); else ``reports/figures``, beside the executed notebooks ``make reproduce``
    writes to ``reports/``."""
    import os
    import tempfile
    from .paths import reports_dir
    if os.environ.get("THINWIRE_FIGURES"):
        return Path(os.environ["THINWIRE_FIGURES"])
    if profile == "smoke":
        return Path(tempfile.mkdtemp(prefix="thinwire-figures-smoke-"))
    return reports_dir() / "figures"


def save(fig, name: str, folder: Path, profile: str) -> Path:
    """``<folder>/<name>_<profile>.png`` and ``.pdf``; returns the PNG's path."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}_{profile}.png"
    fig.savefig(path, dpi=110, bbox_inches="tight")
    fig.savefig(path.with_suffix(".pdf"), bbox_inches="tight")
    return path
