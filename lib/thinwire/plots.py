"""Shared figure style for the notebooks: one colour per method in every figure, none twice in
a panel; coinciding curves told apart by dash and marker; noisy per-step losses smoothed over a
faint raw line; one legend per figure; titles that name the paper's figure and the setup;
seeds as seaborn bands; readable log axes; PNG and PDF.

``color(label)`` fixes a method's colour across every figure of every notebook: the
methods the papers and the comparison show have their own (``METHOD_COLORS``); any other
label gets one from its text (a stable hash into the palette), never from its position in a
legend, so a figure that leaves a method out does not recolour the rest. ``colors(labels)``
is what a panel uses: each label its own colour unless one already took it, then a free
one; more labels than the palette holds calls for small multiples. Categories that are not
methods (push and pull, reference lines, fronts) are drawn in greys (``NEUTRAL``).
"""

from __future__ import annotations

import re
import weakref
import zlib
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from matplotlib import ticker

# Okabe-Ito's colour-blind-safe colours (yellow left out: it vanishes on white), then five more
PALETTE = ("#000000", "#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#332288",
           "#8c564b", "#9467bd", "#17becf", "#bcbd22", "#7f0000")
NEUTRAL = ("0.3", "0.65", "0.85")  # dark, mid and light grey: categories that are not methods
LINESTYLES = ("-", "--", ":", "-.", (0, (5, 1, 1, 1, 1, 1)), (0, (1, 2)), (0, (8, 2)))
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "*", "h", "p", "d")
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
    # the comparison (papers/compare/methods.py): twelve methods, twelve colours
    "all-reduce fp16": "#332288", "PowerSGD rank 2": "#17becf", "top-k 1% + EF, all-gather": "#bcbd22",
    "top-k 1% + EF, PS": "#E69F00", "QSGD 8-bit, PS (Quant-DP)": "#0072B2", "gradient dropping 99%": "#D55E00",
    "Oland & Raj (c=5, M=4)": "#7f0000", "EventGraD": "#CC79A7", "EventGraD + top-10%": "#9467bd",
    "MQGrad": "#8c564b",
    # EventGraD's own labels (papers/eventgrad): D-PSGD is its dense baseline
    "D-PSGD": "#000000", "EventGraD Top-10%": "#9467bd",
    # MQGrad's (papers/mqgrad): the fixed widths and the adaptive rules
    "Fix(2)": "#56B4E9", "Fix(4)": "#E69F00", "Fix(8)": "#0072B2", "Adaptive": "#009E73",
}
PAPERS = {"quickstart": "Quickstart", "gradient_dropping": "Aji & Heafield 2017", "oland_raj": "Oland & Raj 2015",
          "slim_dp": "Slim-DP (Sun et al. 2018)", "eventgrad": "EventGraD (Ghosh et al. 2021)", "mqgrad": "MQGrad (Cui et al. 2018)",
          "compare": "Comparison"}
STYLE = {"figure.titlesize": 12, "axes.titlesize": 11, "axes.labelsize": 10, "xtick.labelsize": 9,
         "ytick.labelsize": 9, "legend.fontsize": 9, "axes.spines.top": False, "axes.spines.right": False,
         "axes.grid": True, "axes.axisbelow": True, "grid.alpha": 0.3, "legend.frameon": False}
_DRAWN = weakref.WeakKeyDictionary()  # figure -> the configs drawn on it
DATASETS = {"mnist": "MNIST", "fashion_mnist": "Fashion-MNIST", "cifar10": "CIFAR-10"}


def use_style() -> None:
    """The workbench's figure style (``STYLE``): titles above labels above tick labels."""
    plt.rcParams.update(STYLE)


def setup_line(runs, extra: str = "", seeds: bool = True) -> str:
    """A figure's second title line, the setup of its runs (configs or results, one or
    several): data set, model, workers x batch, steps and (``seeds``) seeds, each once where
    the runs agree and as the values they take where they differ ("4, 8 workers"); then
    ``extra``. "" for no runs."""
    runs = [runs] if hasattr(runs, "config") or hasattr(runs, "dataset") else list(runs)
    configs = [getattr(r, "config", r) for r in runs]
    if not configs:
        return extra

    def told(get) -> str:
        return ", ".join(str(v) for v in sorted({get(c) for c in configs}, key=lambda v: (str(type(v)), v)))
    several = len({c.seed for c in configs}) > 1
    parts = [told(lambda c: DATASETS.get(c.dataset, c.dataset)), told(lambda c: c.model),
             f"{told(lambda c: c.workers)} workers x batch {told(lambda c: c.batch_size)}",
             f"{told(lambda c: c.steps)} steps"] + ([f"seed{'s' if several else ''} {told(lambda c: c.seed)}"]
                                                    if seeds else [])
    return ", ".join(parts + ([extra] if extra else []))


def _drawn(ax, configs) -> None:
    """Remember the configs a helper drew on ``ax``'s figure: ``save`` names their setup."""
    _DRAWN.setdefault(ax.figure, []).extend(configs)


def _own(label: str) -> str | None:
    """``label``'s colour in ``METHOD_COLORS``, its own or its method's ("Slim-DP (0.3, 0.15),
    K = 8" keeps Slim-DP (0.3, 0.15)'s); None for a label without one."""
    if label in METHOD_COLORS:
        return METHOD_COLORS[label]
    return next((value for method, value in METHOD_COLORS.items()
                 if label.startswith(method + ",") or label.startswith(method + " ")), None)


def color(label: str) -> str:
    """The colour of ``label`` in every figure (see the module docstring)."""
    return _own(label) or PALETTE[zlib.crc32(label.encode()) % len(PALETTE)]


def colors(labels) -> dict:
    """A colour for each of ``labels`` (one panel's), none twice: labels with a colour of
    their own (``METHOD_COLORS``) first, then the rest, each keeping ``color(label)`` unless
    it is taken, else the first free palette colour. More labels than the palette holds:
    ValueError (draw small multiples)."""
    labels = list(dict.fromkeys(labels))
    if len(labels) > len(PALETTE):
        raise ValueError(f"{len(labels)} labels in one panel, more than the palette's {len(PALETTE)} colours: "
                         "split them into small multiples")
    chosen, taken = {}, set()
    for label in sorted(labels, key=lambda lab: _own(lab) is None):  # labels with a colour of their own first
        c = color(label)
        if c.lower() in taken:
            c = next(p for p in PALETTE if p.lower() not in taken)
        chosen[label] = c
        taken.add(c.lower())
    return {label: chosen[label] for label in labels}


def groups(labels, size: int = len(PALETTE)) -> list[list]:
    """``labels`` in order, split into as few panels as keep each within ``size`` (small
    multiples, nearly equal): one panel when they fit the palette."""
    labels = list(labels)
    count = max(1, -(-len(labels) // size))
    cuts = np.linspace(0, len(labels), count + 1).round().astype(int)
    return [labels[a:b] for a, b in zip(cuts[:-1], cuts[1:])]


def smoothed(values: np.ndarray, window: int) -> np.ndarray:
    """The centred moving average of ``values`` over ``window`` points (fewer at the ends)."""
    import pandas as pd
    return pd.Series(values).rolling(window, center=True, min_periods=1).mean().to_numpy()


def legend(fig, **kwargs):
    """One legend for the figure, right of its panels: every label of every panel once (the
    panels' own legends removed)."""
    handles = {}
    for ax in fig.axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(label, handle)
        if ax.get_legend() is not None:
            ax.get_legend().remove()
    right = max(ax.get_position().x1 for ax in fig.axes)
    return fig.legend(list(handles.values()), list(handles), loc="center left", bbox_to_anchor=(right + 0.01, 0.5),
                      **kwargs)


def plain_ticks(axis) -> None:
    """Log-axis ticks that read as plain numbers (0.5, 2, 300), not 2x10^0: ``axis`` is an
    ``ax.yaxis``, ``ax.xaxis`` or a colour bar's ``bar.ax.yaxis``."""
    axis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}" if f"{v:.1g}"[0] in "25" else ""))


def log_axis(ax, which: str = "y") -> None:
    """A log scale whose ticks read as plain numbers (``plain_ticks``)."""
    getattr(ax, f"set_{which}scale")("log")
    plain_ticks(ax.yaxis if which == "y" else ax.xaxis)


def _title(name: str) -> str:
    """'slim_dp_fig3_time' -> 'Slim-DP (Sun et al. 2018), Fig. 3: time' (and fig4_5: Figs. 4-5)."""
    for key, paper in PAPERS.items():
        if name.startswith(key + "_"):
            rest = name[len(key) + 1:]
            m = re.match(r"fig(\d+(?:_\d+)*)_?(.*)", rest)  # fig4_5_loss: Figs. 4-5: loss
            figs = m.group(1).split("_") if m else []
            what = (f"Fig{'s' if len(figs) > 1 else ''}. {'-'.join(figs)}: {m.group(2).replace('_', ' ')}" if m
                    else rest.replace("_", " "))
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


def curves(results: dict, y: str, x: str = "step", ax=None, ylabel: str | None = None,
           smooth: bool | None = None):
    """One line per labelled result: metric ``y`` against ``step`` or modelled ``time``. Each
    label has its colour (``colors``), its dash pattern and its marker, so a curve drawn over
    an identical one leaves it visible. ``smooth`` (by default: the training loss with 30
    points or more) draws the raw series faint and its moving average over it."""
    ax = ax or plt.gca()
    palette = colors(results)
    _drawn(ax, [r.config for r in results.values()])
    for i, (label, result) in enumerate(results.items()):
        keep, values = _series(result, y)
        xs = (np.asarray(result.metrics["step"]) + 1 if x == "step" else modelled_time(result))[keep]
        values = values[keep]
        if smooth if smooth is not None else (y == "loss" and len(values) >= 30):
            ax.plot(xs, values, color=palette[label], alpha=0.2, lw=0.7)
            values = smoothed(values, max(5, len(values) // 30))
        ax.plot(xs, values, label=label, color=palette[label], ls=LINESTYLES[i % len(LINESTYLES)],
                marker=MARKERS[i % len(MARKERS)], ms=4, markevery=max(1, len(values) // 12))
    ax.set_xlabel("step" if x == "step" else "modelled time (s)")
    ax.set_ylabel(ylabel or y)
    return ax


def band(runs: dict, y: str, x: str = "step", ax=None, ylabel: str | None = None):
    """One line per label, the mean over its runs (seeds) of metric ``y``, with a seaborn
    band from their minimum to their maximum; ``x`` is ``step`` or modelled ``time`` (mean
    over the runs of a label)."""
    import pandas as pd
    import seaborn as sns
    ax = ax or plt.gca()
    _drawn(ax, [r.config for results in runs.values() for r in results])
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
                 palette=colors(runs), marker="o" if few else None, markersize=4,
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
    palette = colors(str(label) for label in groups)
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
        ax.axvspan(start, hi, color=NEUTRAL[2], alpha=0.5, zorder=0, lw=0,
                   label="modelled only" if checked_to else "modelled only (nothing checked)")
        ax.set_xlim(lo, hi)


def figure_folder(profile: str) -> Path:
    """Where a notebook run at ``profile`` saves its figures, printed so that its reader
    finds them: ``$THINWIRE_FIGURES`` when set; else ``reports/figures``, beside the
    executed notebooks ``make reproduce`` writes to ``reports/``, and its ``smoke`` folder at
    the smoke profile (``$THINWIRE_REPORTS`` moves both: the goldens' runs point it at a
    temporary folder). It also sets the figure style (``use_style``)."""
    import os
    from .paths import reports_dir
    folder = (Path(os.environ["THINWIRE_FIGURES"]) if os.environ.get("THINWIRE_FIGURES")
              else reports_dir() / "figures" / ("smoke" if profile == "smoke" else ""))
    print(f"figures: {folder}")
    use_style()
    return folder


def save(fig, name: str, folder: Path, profile: str, setup: str | None = None) -> Path:
    """``<folder>/<name>_<profile>.png`` and ``.pdf``; returns the PNG's path. A figure
    without a title gets one that names the paper and its figure (from ``name``); below it
    goes ``setup`` (``setup_line``), by default the setup of the runs ``curves`` and ``band``
    drew on it."""
    folder.mkdir(parents=True, exist_ok=True)
    if setup is None and _DRAWN.get(fig):
        setup = setup_line(_DRAWN[fig])
    title = _title(name) if fig._suptitle is None else fig._suptitle.get_text()
    if fig._suptitle is None or setup:
        fig.suptitle(title + (f"\n{setup}" if setup else ""), y=1.02 + 0.04 * bool(setup))
    path = folder / f"{name}_{profile}.png"
    fig.savefig(path, dpi=110, bbox_inches="tight")
    fig.savefig(path.with_suffix(".pdf"), bbox_inches="tight")
    return path
