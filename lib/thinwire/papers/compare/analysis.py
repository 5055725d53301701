"""The comparison's tables, from finished runs and their step times (``pricing.py``).

Each function takes ``{(method, seed): ...}`` and returns a pandas frame; means are over
seeds, and a method that misses the target in any seed has no time (inf) there.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...experiment.measures import final_accuracy
from .methods import FP16_ALLREDUCE
from .pricing import SCHEDULES, FixedCosts, StepTimes, crossover

GRID = np.geomspace(1e7, 12.5e9, 31)  # 10 MB/s to 100 Gb/s, bytes/s
TIE = 0.05  # methods this close to the fastest tie with it: measured step times move by this much between reruns
MARKS = {"10 MB/s": 1e7, "100 MB/s": 1e8, "1 Gb/s": 1.25e8, "10 Gb/s": 1.25e9, "100 Gb/s": 1.25e10}


def accuracy_bytes(results: dict) -> pd.DataFrame:
    """One row per run: final accuracy (last evaluation), bytes on the wire, payload, framing."""
    rows = []
    for (method, seed), r in results.items():
        m = r.metrics
        rows.append({"method": method, "seed": seed, "final accuracy": final_accuracy(r),
                     "bytes": int(np.sum(m["bytes"])), "payload": int(np.sum(m["payload_bytes"])),
                     "framing": int(np.sum(m["bytes"]) - np.sum(m["payload_bytes"]))})
    return pd.DataFrame(rows)


def pareto(frame: pd.DataFrame) -> list[str]:
    """The methods no other beats on both mean accuracy and mean bytes."""
    means = frame.groupby("method", sort=False)[["final accuracy", "bytes"]].mean()
    return [m for m, row in means.iterrows()
            if not ((means["final accuracy"] >= row["final accuracy"]) & (means["bytes"] <= row["bytes"])
                    & ((means["final accuracy"] > row["final accuracy"]) | (means["bytes"] < row["bytes"]))).any()]


def default_target(frame: pd.DataFrame, fraction: float = 0.97) -> float:
    """``fraction`` of the fp16 all-reduce's mean final accuracy."""
    base = frame[frame["method"] == FP16_ALLREDUCE]["final accuracy"]
    if base.empty:
        raise ValueError(f"the target needs the {FP16_ALLREDUCE!r} runs; they are not among the methods")
    return float(fraction * base.mean())


def time_to_target(step_times: dict[tuple[str, int], StepTimes], target: float, costs: FixedCosts,
                   grid=GRID) -> pd.DataFrame:
    """Long frame: method, seed, schedule, bandwidth (bytes/s), seconds to ``target``."""
    rows = [{"method": method, "seed": seed, "schedule": schedule, "bandwidth": float(b),
             "seconds": st.time_to(target, costs, float(b), schedule)}
            for (method, seed), st in step_times.items() for schedule in SCHEDULES for b in grid]
    return pd.DataFrame(rows)


def mean_seconds(frame: pd.DataFrame) -> pd.DataFrame:
    """(schedule, method) x bandwidth: mean seconds over seeds (inf where a seed missed)."""
    return frame.groupby(["schedule", "method", "bandwidth"], sort=False)["seconds"].mean().unstack("bandwidth")


def _against(frame: pd.DataFrame, baseline: str):
    """(schedule, table of mean seconds, method, its row) for every method but ``baseline``."""
    means = mean_seconds(frame)
    for schedule in means.index.get_level_values("schedule").unique():
        table = means.loc[schedule]
        if baseline not in table.index:
            raise ValueError(f"baseline={baseline!r} is not among the methods")
        for method, row in table.iterrows():
            if method != baseline:
                yield schedule, table, method, row


def crossovers(frame: pd.DataFrame, baseline: str = FP16_ALLREDUCE) -> pd.DataFrame:
    """method x schedule: the bandwidth (MB/s) up to which, from the lowest, the method
    reaches the target at least 1% sooner than ``baseline`` (inf: on the whole grid; NaN:
    not even at the lowest, ``pricing.crossover``)."""
    out = {}
    for schedule, table, method, row in _against(frame, baseline):
        x = crossover(table.columns.to_numpy(), row.to_numpy(), table.loc[baseline].to_numpy())
        out.setdefault(method, {})[schedule] = np.nan if x is None else x / 1e6
    return pd.DataFrame(out).T


def _num(bandwidth: float) -> str:
    v = bandwidth / 1e6
    return f"{v:,.0f}" if v >= 100 else f"{v:.3g}"


def _mb(bandwidth: float) -> str:
    return f"{_num(bandwidth)} MB/s"


def _ranges(grid: np.ndarray, pays: np.ndarray) -> list[tuple[float, float]]:
    ranges, start = [], None
    for i, p in enumerate([*pays, False]):
        if p and start is None:
            start = i
        elif not p and start is not None:
            ranges.append((grid[start], grid[i - 1]))
            start = None
    return ranges


def _range_text(grid: np.ndarray, pays: np.ndarray) -> str:
    if not len(grid):
        return ""
    whole = f"{_num(grid[0])}-{_mb(grid[-1])}" if len(grid) > 1 else _mb(grid[0])
    ranges = _ranges(grid, pays)
    return ("nowhere in " + whole if not ranges else "all of " + whole if pays.all() else
            "; ".join(_mb(lo) if lo == hi else f"{_num(lo)}-{_mb(hi)}" for lo, hi in ranges))


def paying_intervals(frame: pd.DataFrame, baseline: str = FP16_ALLREDUCE, margin: float = 0.01,
                     validated: float | None = None) -> pd.DataFrame:
    """method x (schedule, range): the bandwidth ranges of the grid in which the method
    reaches the target at least ``margin`` sooner than ``baseline`` (means over seeds), as
    text: "10-125 MB/s", several ranges joined by "; ", "nowhere in ..." or "all of ...". A
    method may pay only at high bandwidth; no range is cut at the grid's ends. Two columns per
    schedule: the part of the grid the network model was checked on a shaped network (up to
    ``validated`` bytes/s, ``netcheck.validated_max``; empty when nothing was checked) and
    the part priced by the model alone."""
    out = {}
    for schedule, table, method, row in _against(frame, baseline):
        grid = table.columns.to_numpy(dtype=float)
        pays = row.to_numpy(dtype=float) < (1 - margin) * table.loc[baseline].to_numpy(dtype=float)
        checked = grid <= validated if validated else np.zeros(len(grid), dtype=bool)
        out.setdefault(method, {})[f"{schedule}, checked"] = _range_text(grid[checked], pays[checked])
        out[method][f"{schedule}, modelled only"] = _range_text(grid[~checked], pays[~checked])
    return pd.DataFrame(out).T


def fastest_at(when: pd.DataFrame, mark: str, schedule: str = "overlap") -> str:
    """The fastest method at ``mark`` (a row of ``which_when``), or it and those it does not
    clear (``ties``), "A (tie: B, C)"."""
    best, tied = when.loc[mark, f"fastest ({schedule})"], when.loc[mark, f"ties ({schedule})"]
    return f"{best} (tie: {tied})" if tied else best


def nearest(columns, bandwidth: float):
    """The grid point of ``columns`` (bandwidths) nearest ``bandwidth`` on a log axis."""
    values = np.asarray(columns, dtype=float)
    return columns[int(np.argmin(np.abs(np.log(values / bandwidth))))]


def spread(frame: pd.DataFrame) -> pd.DataFrame:
    """(schedule, method, bandwidth) -> mean seconds over seeds and its standard error (inf
    mean where a seed missed the target; se 0 for one seed)."""
    return _mean_se(frame, ["schedule", "method", "bandwidth"])


def _mean_se(frame: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    grouped = frame.groupby(by, sort=False)["seconds"]
    out = pd.DataFrame({"mean": grouped.mean(), "se": grouped.std(ddof=1) / np.sqrt(grouped.count())})
    out["se"] = out["se"].fillna(0.0)
    return out


def ties(means: pd.Series, ses: pd.Series) -> tuple[str, list[str]]:
    """(fastest, the methods it does not clear): a method ties with the fastest when its
    interval, mean - se, reaches the fastest's mean + se, or its mean is within ``TIE`` of
    it (measured step times move by that much between reruns of one config)."""
    best = means.idxmin()
    if not np.isfinite(means[best]):
        return "none reaches the target", []
    top = max(means[best] + ses[best], (1 + TIE) * means[best])
    return best, [m for m in means.index if m != best and np.isfinite(means[m]) and means[m] - ses[m] <= top]


def which_when(frame: pd.DataFrame, baseline: str = FP16_ALLREDUCE, marks: dict = MARKS,
               without: tuple[str, ...] = (), validated: float | None = None) -> pd.DataFrame:
    """Per bandwidth and schedule: the fastest method to the target, its speed-up over
    ``baseline`` and the methods it does not clear over the seeds (``ties``); with
    ``without``, the same for the other methods. ``range``: whether the bandwidth is in the
    range checked on a shaped network (up to ``validated`` bytes/s) or priced by the model alone."""
    stats = spread(frame)
    rows = {}
    for name, b in marks.items():
        row = {}
        for schedule in SCHEDULES:
            table = stats.loc[schedule]
            column = nearest(table.index.get_level_values("bandwidth").unique(), b)
            at = table.xs(column, level="bandwidth")
            choices = {"": at}
            if without:
                choices[" without " + ", ".join(without)] = at.drop(list(without), errors="ignore")
            for suffix, times in choices.items():
                best, tied = ties(times["mean"], times["se"])
                row[f"fastest{suffix} ({schedule})"] = best
                row[f"speed-up over {baseline}{suffix} ({schedule})"] = (
                    at.loc[baseline, "mean"] / times.loc[best, "mean"] if best in times.index else float("nan"))
                row[f"ties{suffix} ({schedule})"] = ", ".join(tied)
        row["range"] = "checked" if validated and b <= validated else "modelled only"
        rows[name] = row
    return pd.DataFrame(rows).T


def near_best_target(frame: pd.DataFrame, fraction: float = 0.995) -> float:
    """``fraction`` of the best method's mean final accuracy: a target only the methods that
    train as well as the best reach within the run."""
    return float(fraction * frame.groupby("method")["final accuracy"].mean().max())


COMPUTES = (1e-4, 1e-3, 1e-2, 1e-1)  # seconds of gradient computation a step: 0.1 to 100 ms


def time_map(step_times: dict[tuple[str, int], StepTimes], target: float, costs: FixedCosts, grid=GRID,
             computes=COMPUTES, schedule: str = "overlap") -> pd.DataFrame:
    """Long frame: method, seed, compute (seconds a step), bandwidth, seconds to ``target``:
    each run's measured steps to the target, its measured codec work and its priced
    communication, with a gradient computation of ``compute`` seconds a step in place of
    this machine's (``StepTimes.step_seconds``)."""
    rows = [{"method": method, "seed": seed, "compute": float(c), "bandwidth": float(b),
             "seconds": st.time_to(target, costs, float(b), schedule, gradient_s=float(c))}
            for (method, seed), st in step_times.items() for c in computes for b in grid]
    return pd.DataFrame(rows)


def map_fastest(frame: pd.DataFrame, baseline: str = FP16_ALLREDUCE) -> pd.DataFrame:
    """(compute, bandwidth) of ``time_map``'s frame -> the fastest method (``ties``), the
    methods it does not clear and its speed-up over ``baseline``."""
    stats = _mean_se(frame, ["compute", "bandwidth", "method"])
    rows = {}
    for (c, b), at in stats.groupby(level=["compute", "bandwidth"], sort=False):
        at = at.droplevel(["compute", "bandwidth"])
        best, tied = ties(at["mean"], at["se"])
        rows[(c, b)] = {"fastest": best, "ties": ", ".join(tied),
                        "speed-up": at.loc[baseline, "mean"] / at.loc[best, "mean"] if best in at.index else float("nan")}
    out = pd.DataFrame(rows).T
    out.index.names = ["compute", "bandwidth"]
    return out


def codec_against_saving(step_times: dict[tuple[str, int], StepTimes], costs: FixedCosts,
                         baseline: str = FP16_ALLREDUCE, marks: dict = MARKS) -> pd.DataFrame:
    """method: codec ms per step (the method's own work), the workbench's framing and
    checksum ms per step (measured, left out of every price: ``StepTimes``) and, per
    bandwidth, the communication ms per step it saves against ``baseline`` (negative: it
    costs more), means over steps and seeds."""
    rows: dict[str, dict[str, list]] = {}
    base = [st for (m, _), st in step_times.items() if m == baseline]
    if not base:
        raise ValueError(f"baseline={baseline!r} is not among the methods")
    base_comm = {b: np.mean([st.comm(costs, b).mean() for st in base]) for b in marks.values()}
    for (method, _), st in step_times.items():
        row = rows.setdefault(method, {"codec ms/step": [], "framing ms/step (left out)": []}
                              | {f"saved at {n}": [] for n in marks})
        row["codec ms/step"].append(1e3 * st.codec.mean())
        row["framing ms/step (left out)"].append(1e3 * st.frame.mean())
        for name, b in marks.items():
            row[f"saved at {name}"].append(1e3 * (base_comm[b] - st.comm(costs, b).mean()))
    return pd.DataFrame({m: {k: float(np.mean(v)) for k, v in row.items()} for m, row in rows.items()}).T
