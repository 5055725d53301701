"""Why MQGrad leads or trails a baseline at a time budget: the experiments behind the
notebook's "why" (tested).

At a budget two things separate MQGrad from a baseline: how many iterations each had done
by then (the bits it sent price every iteration on the network), and how much each learned
per iteration. ``budget_gaps`` splits the difference between the means over seeds in two,
both in MQGrad's favour when positive:

    MQGrad(n_m) - baseline(n_b) = [baseline(n_m) - baseline(n_b)] + [MQGrad(n_m) - baseline(n_m)]
                                    from iterations: the baseline's      per iteration: both after
                                    extra (or fewer) iterations           MQGrad's own count

where X(n) is X's test accuracy after n iterations (its last evaluation at or before n) and
n_b, n_m the iterations each had done by the budget (seed by seed). The first part is the
price of the bits; the second is what quantization and the agent's choices did to learning.

``resolution`` says whether a difference is larger than the seeds' noise: the standard error
of the mean of the seed-by-seed differences. ``stability`` counts the runs that collapsed
(ended at chance after having learned) and their worst training loss: the evidence for the
profiles' lr (``profiles.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .analysis import FRACTIONS, _mean, accuracy_at, budgets, by_label, elapsed, relative_table
from .runs import LABELS

if TYPE_CHECKING:
    import pandas as pd

CHANCE = 20.0    # an accuracy (%) at or below this is chance for 10 classes, with room for noise
LEARNED = 50.0   # a run that once reached this had learned


def accuracy_after(result, iterations: int) -> float | None:
    """Test accuracy (%) of the last evaluation after at most ``iterations`` iterations."""
    known = [a for i, a in enumerate(result.metrics["test_accuracy"][:iterations]) if a is not None]
    return 100.0 * known[-1] if known else None


def iterations_by(result, seconds: float) -> int:
    """Iterations done within ``seconds`` of modelled time."""
    return int(np.searchsorted(elapsed(result), seconds * (1 + 1e-12), side="right"))


def equal_iterations_table(methods: dict, marks: tuple[float, ...] = (0.25, 0.5, 0.75, 1.0)) -> "pd.DataFrame":
    """Mean test accuracy (%) over seeds after the same iterations (fractions of the run),
    with the spread (maximum minus minimum) over seeds: learning per iteration, whatever
    an iteration costs."""
    import pandas as pd
    runs = by_label(methods)
    steps = runs["Fix(8)"][0].steps
    rows = {}
    for label in LABELS:
        row = {}
        for f in marks:
            n = max(1, round(f * steps))
            values = [accuracy_after(r, n) for r in runs[label]]
            row[f"after {n}"] = _mean(values)
            if len(values) > 1 and None not in values:
                row[f"spread {n}"] = float(max(values) - min(values))
        rows[label] = row
    return pd.DataFrame(rows).T


def _best_baseline(runs: dict, seconds: float) -> tuple[str | None, float | None]:
    best = (None, None)
    for label in LABELS:
        if label == "MQGrad":
            continue
        mean = _mean([accuracy_at(r, seconds) for r in runs[label]])
        if mean is not None and (best[1] is None or mean > best[1]):
            best = (label, mean)
    return best


def budget_gaps(methods: dict) -> "pd.DataFrame":
    """At each budget: MQGrad and the best baseline (means over seeds), the iterations each
    had done, and the difference split into iterations and per-iteration learning (module
    docstring). Budgets past MQGrad's or every baseline's end are left out."""
    import pandas as pd
    runs = by_label(methods)
    rows = {}
    for f, seconds in zip(FRACTIONS, budgets(runs["Fix(8)"][0])):
        label, base = _best_baseline(runs, seconds)
        mine = _mean([accuracy_at(r, seconds) for r in runs["MQGrad"]])
        if label is None or mine is None:
            continue
        n_m = [iterations_by(r, seconds) for r in runs["MQGrad"]]
        n_b = [iterations_by(r, seconds) for r in runs[label]]
        # the baseline after each MQGrad seed's own iteration count, seed by seed
        at_mq = _mean([accuracy_after(b, n) for b, n in zip(runs[label], n_m)])
        rows[f"{f:g} of Fix(8)"] = {
            "best baseline": label, "baseline %": base, "MQGrad %": mine, "MQGrad - baseline": mine - base,
            "baseline iterations": float(np.mean(n_b)), "MQGrad iterations": float(np.mean(n_m)),
            "from iterations": None if at_mq is None else at_mq - base,
            "per iteration": None if at_mq is None else mine - at_mq,
            "MQGrad mean bits so far": float(np.mean([_bits_so_far(r, n) for r, n in zip(runs["MQGrad"], n_m)])),
            **resolution([accuracy_at(r, seconds) for r in runs["MQGrad"]],
                         [accuracy_at(r, seconds) for r in runs[label]])}
    return pd.DataFrame(rows).T


def _bits_so_far(result, iterations: int) -> float:
    bits = [b for b in result.metrics["push_bits"][:iterations] if b is not None]
    return float(np.mean(bits)) if bits else float("nan")


def resolution(a: list, b: list) -> dict[str, float | None]:
    """Seed by seed (the same seed gives both the same initial model and batches): the
    standard error of the mean difference a - b, and whether that mean exceeds two of them."""
    if None in a or None in b or len(a) != len(b) or len(a) < 2:
        return {"standard error": None, "resolved": None}
    d = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    se = float(np.std(d, ddof=1) / np.sqrt(d.size))
    return {"standard error": se, "resolved": bool(abs(d.mean()) > 2 * se)}


def _evaluations(result) -> np.ndarray:
    """The run's test accuracies (%), evaluation by evaluation."""
    return np.asarray([100.0 * a for a in result.metrics["test_accuracy"] if a is not None], dtype=np.float64)


def collapsed(result) -> bool:
    """The run had learned (an evaluation at ``LEARNED`` % or more) and ended at chance."""
    acc = _evaluations(result)
    return bool(acc.size) and acc.max() >= LEARNED and acc[-1] <= CHANCE


def never_learned(result) -> bool:
    acc = _evaluations(result)
    return not acc.size or acc.max() < LEARNED


def swing(result) -> float:
    """The median change (points) between consecutive evaluations over the second half of
    the run: how far one evaluation is from the next while the model trains."""
    acc = _evaluations(result)
    late = acc[acc.size // 2:]
    return float(np.median(np.abs(np.diff(late)))) if late.size > 1 else float("nan")


def stability(groups: dict[str, list]) -> "pd.DataFrame":
    """Per group of runs (e.g. MQGrad at two learning rates, the same seeds): how many
    collapsed or never learned, the worst training loss (mean over runs), the swing between
    evaluations (mean over runs of ``swing``) and the final accuracy (mean, and per run)."""
    import pandas as pd
    rows = {}
    for name, results in groups.items():
        finals = [100.0 * (r.metrics["test_accuracy"][-1] or 0.0) for r in results]
        rows[name] = {"runs": len(results), "collapsed": sum(collapsed(r) for r in results),
                      "never learned": sum(never_learned(r) for r in results),
                      "worst loss": float(np.mean([max(r.metrics["loss"]) for r in results])),
                      "swing (pts)": float(np.mean([swing(r) for r in results])),
                      "final accuracy %": float(np.mean(finals)),
                      "per seed": ", ".join(f"{a:.1f}" for a in finals)}
    return pd.DataFrame(rows).T


def why(methods: dict, learn: "pd.DataFrame | None", steps: int, dataset: str, gaps: "pd.DataFrame",
        stable: "pd.DataFrame | None") -> dict[str, str]:
    """The "why" column of ``paper_vs_ours``: for each method what the notebook's runs show,
    from the tables above it (``budget_gaps``, ``stability``, ``learning_table``; the last two
    made here or quoted, None when neither)."""
    rel = relative_table(methods)
    level = (f"level: the paper trains CIFAR-10 with 16.2 M parameters for 40 h; here {dataset} with the profile's "
             f"CNN for {steps} iterations (CIFAR-10 at the paper's scale needs data/cifar10 and a GPU: not run here, "
             "open)")
    out = {}
    for label in LABELS:
        gaps_of = ", ".join("n/a" if v is None or v != v else f"{v:+.1f}" for v in rel.loc[label])
        out[label] = f"{level}; {label} minus the best baseline at the four budgets: {gaps_of} points"
    parts = []
    for budget, row in gaps.iterrows():
        se = row["standard error"]
        noise = ("one seed: not resolved" if se is None or se != se else
                 f"standard error {se:.1f}, {'resolved' if row['resolved'] else 'not resolved'}")
        split = ("" if row["from iterations"] is None or row["from iterations"] != row["from iterations"] else
                 f" = {row['from iterations']:+.1f} from iterations ({row['MQGrad iterations']:.0f} vs "
                 f"{row['baseline iterations']:.0f}; MQGrad's mean bits {row['MQGrad mean bits so far']:.1f})"
                 f" {row['per iteration']:+.1f} per iteration")
        parts.append(f"at {budget}, MQGrad - {row['best baseline']} {row['MQGrad - baseline']:+.1f}{split} ({noise})")
    out["MQGrad"] += "; " + "; ".join(parts)
    if learn is not None:
        rows = "; ".join(f"{name}: mean bits {row['mean bits']:.2f}, final {row['final accuracy %']:.1f}%"
                         for name, row in learn.iterrows())
        out["MQGrad"] += f"; what the learning does (first seed; one seed, indicative): {rows}"
    if stable is None:
        return out
    methods_rows = [name for name in stable.index if name.split(",")[0] in LABELS and "(the paper's)" not in name]
    if methods_rows:
        swings = stable.loc[methods_rows, "swing (pts)"].astype(float)
        out["MQGrad"] += (f"; one evaluation moves {swings.min():.1f} to {swings.max():.1f} points from the next "
                          "(median over a run's second half, by method)")
    paper_rows = [name for name in stable.index if "(the paper's)" in name]
    for name in paper_rows:
        row = stable.loc[name]
        out["MQGrad"] += (f"; {name}: {int(row['collapsed'])} of {int(row['runs'])} runs collapsed, "
                          f"{int(row['never learned'])} never learned (final {row['per seed']}%)")
    return out


def why_time_ratio(control: "pd.DataFrame") -> str:
    """The "why" of the headline row (time to Fix(4)'s loss): what the control of the same
    bits shuffled shows (``analysis.control_table``), over its seeds: the time ratio where
    every run reached Fix(4)'s final loss, and the final accuracy (the same iterations and
    bytes, so the same modelled time) in every case."""
    seeds = [name for name in control.index if name.startswith("seed ")]
    parts = []
    for what, unit in (("time ratio", "of Fix(4)'s time"), ("final %", "points of final accuracy")):
        diff = control.loc["learned - shuffled", f"learned: {what}"]
        se = control.loc["standard error", f"learned: {what}"]
        if diff is None or diff != diff:
            parts.append(f"{what}: some run never reached Fix(4)'s final loss, not measured")
            continue
        if se is None or se != se:
            parts.append(f"learned minus shuffled {diff:+.3f} {unit} (one seed, indicative)")
            continue
        lower = "the learned timing is better" if (diff < 0) == (what == "time ratio") else "the shuffled timing is better"
        verdict = lower if abs(diff) > 2 * se else "not resolved"
        parts.append(f"learned minus shuffled {diff:+.3f} {unit}, standard error {se:.3f} ({verdict})")
    return (f"the control, the same bits per window in a random order ({len(seeds)} seeds, the same bytes and "
            "iterations): " + "; ".join(parts))
