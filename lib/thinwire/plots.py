"""Shared figure helpers for the notebooks: one colour per method in every figure, seeds
as seaborn bands, readable log axes, titles that name the paper's figure, PNG and PDF.

``color(label)`` fixes a method's colour across every figure of every notebook: the
methods the papers compare have their own (``METHOD_COLORS``); any other label gets one
from its text (a stable hash into the palette), never from its position in a legend, so a
figure that leaves a method out does not recolour the rest.
"""

from __future__ import annotations

import re
import zlib
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from matplotlib import ticker

PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000",
           "#8c564b", "#7f7f7f", "#bcbd22", "#17becf", "#9467bd", "#e377c2", "#1f77b4", "#ff7f0e")
METHOD_COLORS = {
    # dense baselines
    "Plump-DP": "#000000", "Plump-DP (fp32)": "#000000", "baseline": "#000000",
    "baseline (no dropping)": "#000000", "dense": "#000000",
    # quantization
    "Quant-DP": "#0072B2", "8-bit quantization": "#0072B2", "fixed 8 bits": "#0072B2",
    # sparsification
    "top-k 1% + error feedback": "#E69F00",
    "Slim-DP (0.2, 0.1)": "#009E73", "Slim-DP (0.3, 0.15)": "#D55E00", "Slim-DP (0.5, 0.25)": "#CC79A7",
    "drop 90.0%": "#56B4E9", "drop 99.0%": "#D55E00", "drop 99.9%": "#009E73",
    # Oland & Raj's adaptive rule
    "c=5, M=4": "#D55E00", "c=6, M=4": "#009E73",
}
PAPERS = {"quickstart": "Quickstart", "gradient_dropping": "Aji & Heafield 2017", "oland_raj": "Oland & Raj 2015",
          "slim_dp": "Slim-DP (Sun et al. 2018)"}


def color(label: str) -> str:
    """The colour of ``label`` in every figure (see the module docstring)."""
    if label in METHOD_COLORS:
        return METHOD_COLORS[label]
    for method, value in METHOD_COLORS.items():  # "Slim-DP (0.3, 0.15), K = 8" keeps its method's colour
        if label.startswith(method + ",") or label.startswith(method + " "):
            return value
    return PALETTE[zlib.crc32(label.encode()) % len(PALETTE)]


def log_axis(ax, which: str = "y") -> None:
    """A log scale whose ticks read as plain numbers (0.5, 2, 300), not 2x10^0."""
    getattr(ax, f"set_{which}scale")("log")
    axis = ax.yaxis if which == "y" else ax.xaxis
    plain = ticker.FuncFormatter(lambda v, _: f"{v:g}")
    axis.set_major_formatter(plain)
    axis.set_minor_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}" if f"{v:.1g}"[0] in "25" else ""))


def _title(name: str) -> str:
    """'slim_dp_fig3_time' -> 'Slim-DP (Sun et al. 2018), Fig. 3: time'."""
    for key, paper in PAPERS.items():
        if name.startswith(key + "_"):
            rest = name[len(key) + 1:]
            m = re.match(r"fig(\d+)_?(.*)", rest)
            what = f"Fig. {m.group(1)}: {m.group(2).replace('_', ' ')}" if m else rest.replace("_", " ")
            return f"{paper}, {what}"
    return name.replace("_", " ")


def modelled_time(result) -> np.ndarray:
    """Cumulative modelled seconds: the median measured compute per step (after a warm-up,
    ``experiment/timing.py``) + the modelled communication of each step."""
    steps = len(result.metrics["comm_seconds"])
    per_step = result.seconds("compute_seconds") / max(1, result.steps)
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
        ax.plot(xs[keep], values[keep], label=label, marker="o" if keep.sum() < 30 else None, ms=3,
                color=color(label))
    ax.set_xlabel("step" if x == "step" else "modelled time (s)")
    ax.set_ylabel(ylabel or y)
    ax.grid(alpha=0.3)
    return ax


def band(runs: dict, y: str, x: str = "step", ax=None, ylabel: str | None = None):
    """One line per label, the mean over its runs (seeds) of metric ``y``, with a seaborn
    band from their minimum to their maximum; ``x`` is ``step`` or modelled ``time`` (mean
    over the runs of a label)."""
    import pandas as pd
    import seaborn as sns
    ax = ax or plt.gca()
    rows = []
    for label, results in runs.items():
        keep, _ = _series(results[0], y)
        xs = (np.asarray(results[0].metrics["step"]) + 1 if x == "step"
              else np.mean([modelled_time(r) for r in results], axis=0))[keep]
        for seed, r in enumerate(results):
            rows += [(label, seed, a, b) for a, b in zip(xs, _series(r, y)[1][keep])]
    frame = pd.DataFrame(rows, columns=["method", "seed", "x", "y"])
    few = frame.groupby("method")["x"].nunique().max() < 30
    sns.lineplot(frame, x="x", y="y", hue="method", estimator="mean", errorbar=("pi", 100), ax=ax,
                 palette={label: color(label) for label in runs}, marker="o" if few else None, markersize=4,
                 markeredgewidth=0, legend="auto")
    ax.set_xlabel("step" if x == "step" else "modelled time (s)")
    ax.set_ylabel(ylabel or y)
    ax.legend(title=None, fontsize=8, loc="best")
    ax.grid(alpha=0.3)
    return ax


def boxes(groups: dict, ax=None, ylabel: str | None = None, xlabel: str | None = None):
    """One seaborn box per label over its values (seeds), each point shown, the mean
    marked; boxes take their method's colour."""
    import pandas as pd
    import seaborn as sns
    ax = ax or plt.gca()
    frame = pd.DataFrame([(str(label), float(v)) for label, values in groups.items() for v in values],
                         columns=["method", "value"])
    palette = {str(label): color(str(label)) for label in groups}
    sns.boxplot(frame, x="method", y="value", hue="method", palette=palette, saturation=1, showmeans=True,
                legend=False, ax=ax,
                boxprops={"alpha": 0.6}, meanprops={"marker": "^", "markerfacecolor": "white",
                                                    "markeredgecolor": "black"})
    sns.stripplot(frame, x="method", y="value", color="black", size=3, ax=ax)
    ax.set_xlabel(xlabel or "")
    ax.set_ylabel(ylabel or "")
    ax.grid(alpha=0.3)
    return ax


def shade_modelled(ax, checked_to: float | None, unit: float = 1e6) -> None:
    """Grey out the part of a bandwidth axis (in ``unit`` bytes/s) above ``checked_to``
    bytes/s, where a time is the network model's alone (all of it when nothing was checked on
    a shaped network)."""
    lo, hi = ax.get_xlim()
    start = lo if not checked_to else checked_to / unit
    if start < hi:
        ax.axvspan(start, hi, color="0.85", alpha=0.5, zorder=0, lw=0,
                   label="modelled only" if checked_to else "modelled only (nothing checked)")
        ax.set_xlim(lo, hi)


def figure_folder(profile: str) -> Path:
    """Where a notebook run at ``profile`` saves its figures, printed so that its reader
    finds them: ``$THINWIRE_FIGURES`` when set; else ``reports/figures``, beside the
    executed notebooks ``make reproduce`` writes to ``reports/``, and its ``smoke`` folder at
    the smoke profile (``$THINWIRE_REPORTS`` moves both: the goldens' runs point it at a
    temporary folder)."""
    import os
    from .paths import reports_dir
    folder = (Path(os.environ["THINWIRE_FIGURES"]) if os.environ.get("THINWIRE_FIGURES")
              else reports_dir() / "figures" / ("smoke" if profile == "smoke" else ""))
    print(f"figures: {folder}")
    return folder


def save(fig, name: str, folder: Path, profile: str) -> Path:
    """``<folder>/<name>_<profile>.png`` and ``.pdf``; returns the PNG's path. A figure
    without a title gets one that names the paper and its figure (from ``name``)."""
    folder.mkdir(parents=True, exist_ok=True)
    if fig._suptitle is None:
        fig.suptitle(_title(name), fontsize=10, y=1.03)  # above the panels' own titles
    path = folder / f"{name}_{profile}.png"
    fig.savefig(path, dpi=110, bbox_inches="tight")
    fig.savefig(path.with_suffix(".pdf"), bbox_inches="tight")
    return path
