"""The numbers the MQGrad notebook reports, computed from results (tested).

Time. The paper's x axis is hours of training on its cluster; ours is the *modelled* time
each iteration reports (``modelled_time``: the compute parameter plus that iteration's
messages priced on the run's network, ``algorithms/mqgrad.py``), summed: deterministic,
so a budget falls at the same iteration on every machine. Budgets are fractions of
Fix(8)'s whole run (the paper's 5 / 15 / 30 / 40 h are 1/8, 3/8, 3/4 and 1 of Fix(8)'s
40 h). Every method runs the same iterations; one whose run has ended before a budget has
no accuracy there (the paper's "N/A"). The accuracy at a budget is the last evaluation at
or before it.

Loss. The training loss the workers report (cross-entropy plus the L2 term), smoothed with
a trailing mean of ``SMOOTH`` iterations for the curves and the time-to-loss ratio.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ...experiment import measures
from .published import PUBLISHED
from .runs import LABELS

if TYPE_CHECKING:
    import pandas as pd

FRACTIONS = (1 / 8, 3 / 8, 3 / 4, 1.0)
SMOOTH = 10


def elapsed(result) -> np.ndarray:
    """Modelled seconds at the end of each iteration."""
    return np.cumsum(np.asarray(result.metrics["modelled_time"], dtype=np.float64))


def run_time(result) -> float:
    return float(elapsed(result)[-1])


def smoothed_loss(result, window: int = SMOOTH) -> np.ndarray:
    """The trailing mean of the last ``window`` training losses at each iteration."""
    loss = np.asarray(result.metrics["loss"], dtype=np.float64)
    sums = np.cumsum(np.concatenate([[0.0], loss]))
    starts = np.maximum(np.arange(1, loss.size + 1) - window, 0)
    return (sums[1:] - sums[starts]) / (np.arange(1, loss.size + 1) - starts)


def accuracy_at(result, seconds: float) -> float | None:
    """Test accuracy (%) of the last evaluation at or before ``seconds`` of modelled time;
    None when the run ended before (the paper's N/A) or had no evaluation yet."""
    t = elapsed(result)
    if seconds > t[-1] * (1 + 1e-12):
        return None
    known = [(time, acc) for time, acc in zip(t, result.metrics["test_accuracy"]) if acc is not None and time <= seconds * (1 + 1e-12)]
    return 100.0 * known[-1][1] if known else None


def budgets(fix8) -> list[float]:
    """The modelled seconds of the four budgets: fractions of Fix(8)'s run."""
    return [f * run_time(fix8) for f in FRACTIONS]


def _mean(values):
    known = [v for v in values if v is not None]
    return float(np.mean(known)) if len(known) == len(values) and known else None


def by_label(methods: dict) -> dict[str, list]:
    """{label: [result per seed]} from {(label, seed): result}."""
    out: dict[str, list] = {}
    for (label, _), result in sorted(methods.items(), key=lambda item: item[0][1]):
        out.setdefault(label, []).append(result)
    return out


def accuracy_table(methods: dict) -> "pd.DataFrame":
    """Table 1-2 analogue: accuracy (%) at each budget, the mean over seeds (a budget past
    a run's end is N/A, as in the paper), with the spread over seeds (maximum minus minimum)."""
    import pandas as pd
    runs = by_label(methods)
    marks = budgets(runs["Fix(8)"][0])
    rows = {}
    for label in LABELS:
        row = {}
        for f, b in zip(FRACTIONS, marks):
            values = [accuracy_at(r, b) for r in runs[label]]
            row[f"{f:g} of Fix(8)"] = _mean(values)
            if len(values) > 1 and None not in values:
                row[f"{f:g} spread"] = float(max(values) - min(values))
        rows[label] = row
    table = pd.DataFrame(rows).T
    order = [f"{f:g} of Fix(8)" for f in FRACTIONS] + [f"{f:g} spread" for f in FRACTIONS]
    return table[[c for c in order if c in table.columns]]


def time_to_loss(result, target: float) -> float | None:
    """Modelled seconds until the smoothed training loss first reaches ``target``."""
    reached = np.nonzero(smoothed_loss(result) <= target)[0]
    return float(elapsed(result)[reached[0]]) if reached.size else None


def time_ratio(result, fix4) -> float | None:
    """The time ``result`` takes to reach Fix(4)'s final smoothed loss, over Fix(4)'s run
    time (the paper: MQGrad 7.5 h earlier than Fix(4), about 0.81)."""
    reached = time_to_loss(result, float(smoothed_loss(fix4)[-1]))
    return None if reached is None else reached / run_time(fix4)


def bits_trajectory(result) -> dict[str, np.ndarray]:
    """Per iteration: the modelled time, the mean bit width of the quantized pushes, and
    at each decision the state's level n_t and the bits sent."""
    bits = np.asarray([np.nan if b is None else b for b in result.metrics["push_bits"]], dtype=np.float64)
    decisions = [i for i, b in enumerate(result.metrics.get("sarsa_bits", [])) if b is not None]
    return {"time": elapsed(result), "push_bits": bits, "decision_steps": np.asarray(decisions),
            "level": np.asarray([result.metrics["sarsa_level"][i] for i in decisions]),
            "sent": np.asarray([result.metrics["sarsa_bits"][i] for i in decisions])}


def mean_bits(result) -> float:
    """The mean bit width of the quantized tensors' pushes over the run."""
    return float(result.summary["push_bits"])


def learning_table(runs: dict) -> "pd.DataFrame":
    """What the learning does: per agent variant, its mean bits, share of decisions that
    explored, its final accuracy, when its state first left the initial bits, and its
    ``reward_to_q_ratio``."""
    import pandas as pd
    rows = {}
    for label, r in runs.items():
        explored = [e for e in r.metrics.get("sarsa_explored", []) if e is not None]
        path = bits_trajectory(r)
        raised = np.nonzero(path["level"] > path["level"][0])[0] if path["level"].size else np.zeros(0)
        rows[label] = {"mean bits": mean_bits(r), "explored %": 100.0 * float(np.mean(explored)) if explored else 0.0,
                       "final level": float(path["level"][-1]) if path["level"].size else None,
                       "first raise at iteration": int(path["decision_steps"][raised[0]]) if raised.size else None,
                       "final accuracy %": 100.0 * measures.final_accuracy(r),
                       "reward / Q gap": reward_to_q_ratio(r)}
    return pd.DataFrame(rows).T


def time_shares(methods: dict) -> "pd.DataFrame":
    """Table 3 analogue: the share (%) of an iteration's time spent quantizing and
    de-quantizing (measured codec seconds: a worker's and the server's) and in the bit-width
    policy (measured selection seconds), of the iteration's modelled time plus those."""
    import pandas as pd
    rows = {}
    for label, results in by_label(methods).items():
        r = results[0]
        steps = r.steps
        codec = (measures.codec_seconds(r, part="encode") + measures.codec_seconds(r, part="decode")) / steps
        policy = measures.codec_seconds(r, part="select") / steps
        whole = run_time(r) / steps + codec + policy
        rows[label] = {"quantization %": 100.0 * codec / whole, "policy %": 100.0 * policy / whole,
                       "codec ms/iteration": 1e3 * codec, "policy ms/iteration": 1e3 * policy,
                       "modelled s/iteration": run_time(r) / steps}
    return pd.DataFrame(rows).T


def decisions(result) -> dict[str, np.ndarray]:
    """At each decision with a reward (all but the first): the iteration, the reward
    r_{t-1} and Q(s_t, +1) - Q(s_t, keep) (``sarsa_bits``' trace; none at the top level)."""
    m = result.metrics
    rows = [(i, r, up - keep) for i, (r, up, keep) in enumerate(zip(m.get("sarsa_reward", []), m.get("sarsa_q_up", []),
                                                                     m.get("sarsa_q_keep", [])))
            if r is not None and up is not None and keep is not None]
    i, r, dq = zip(*rows) if rows else ((), (), ())
    return {"iteration": np.asarray(i), "reward": np.asarray(r, dtype=np.float64), "q_gap": np.asarray(dq, dtype=np.float64)}


def reward_to_q_ratio(result) -> float | None:
    """Median |reward| over median |Q(+1) - Q(keep)| at the decisions: well below 1, one
    reward cannot move the greedy choice, which follows the Q network's initial outputs."""
    d = decisions(result)
    if not d["reward"].size or not np.median(np.abs(d["q_gap"])):
        return None
    return float(np.median(np.abs(d["reward"])) / np.median(np.abs(d["q_gap"])))


def time_ratios(methods: dict, label: str = "MQGrad") -> dict[int, float | None]:
    """seed -> ``time_ratio`` of ``label``'s run against Fix(4)'s on that seed."""
    by = by_label(methods)
    fix4 = {r.config.seed: r for r in by["Fix(4)"]}
    return {r.config.seed: time_ratio(r, fix4[r.config.seed]) for r in by[label]}


def control_table(methods: dict, controls: dict[int, object]) -> "pd.DataFrame":
    """MQGrad's learned schedule against its control (seed -> the run of the same bits
    shuffled, ``runs.shuffled``), seed by seed: the time to Fix(4)'s final loss over Fix(4)'s
    time, and the final accuracy; then the mean difference with its standard error."""
    import pandas as pd
    from .gaps import resolution
    fix4 = {r.config.seed: r for r in by_label(methods)["Fix(4)"]}
    learned = {r.config.seed: r for r in by_label(methods)["MQGrad"]}
    rows = {}
    for seed, control in controls.items():
        r = learned[seed]
        rows[f"seed {seed}"] = {"learned: time ratio": time_ratio(r, fix4[seed]),
                                "shuffled: time ratio": time_ratio(control, fix4[seed]),
                                "learned: final %": 100 * measures.final_accuracy(r),
                                "shuffled: final %": 100 * measures.final_accuracy(control),
                                "mean bits": mean_bits(r), "shuffled mean bits": mean_bits(control)}
    table = pd.DataFrame(rows).T
    summary = {}
    for what in ("time ratio", "final %"):
        a, b = [r[f"learned: {what}"] for r in rows.values()], [r[f"shuffled: {what}"] for r in rows.values()]
        known = None not in a and None not in b
        diff = float(np.mean(np.asarray(a, float) - np.asarray(b, float))) if known else None
        res = resolution(a, b) if known else {"standard error": None, "resolved": None}
        summary[f"learned: {what}"] = {"learned - shuffled": diff, "standard error": res["standard error"],
                                       "resolved (> 2 s.e.)": res["resolved"]}
    return pd.concat([table, pd.DataFrame(summary)])


def paper_vs_ours(methods: dict, why: dict[str, str] | None = None) -> "pd.DataFrame":
    """Accuracy at each budget beside the paper's 12-node Table 1 (5 / 15 / 30 / 40 h),
    with the gap, then the headline claim (Sec. 4.2): MQGrad's time to Fix(4)'s final loss
    as a share of Fix(4)'s time (the mean over the seeds that reached it); ``why``: label
    (and ``"time to Fix(4)'s loss"``) -> the cause the notebook's experiments show."""
    import pandas as pd
    from .gaps import resolution
    ours = accuracy_table(methods)
    rows = {}
    ratios = time_ratios(methods)
    reached = [v for v in ratios.values() if v is not None]
    mine = 100 * float(np.mean(reached)) if reached else None
    se = resolution(reached, [0.0] * len(reached))["standard error"] if len(reached) == len(ratios) else None
    spread = "" if se is None else f", standard error {100 * se:.1f}"
    rows[f"MQGrad: time to Fix(4)'s final loss, % of Fix(4)'s time ({len(reached)} of {len(ratios)} seeds reached"
         f"{spread})"] = {"paper %": 100 * PUBLISHED["time_ratio_vs_fix4"], "ours %": mine,
                          "gap (pts)": None if mine is None else mine - 100 * PUBLISHED["time_ratio_vs_fix4"],
                          "why": (why or {}).get("time to Fix(4)'s loss", "")}
    for label in LABELS:
        for f, hours, paper in zip(FRACTIONS, PUBLISHED["hours"], PUBLISHED["table1"][label]):
            mine = ours.loc[label, f"{f:g} of Fix(8)"]
            mine = None if mine is None or mine != mine else float(mine)
            rows[f"{label} @ {hours} h ({f:g})"] = {
                "paper %": paper, "ours %": mine,
                "gap (pts)": None if paper is None or mine is None else mine - paper,
                "why": (why or {}).get(label, "")}
    return pd.DataFrame(rows).T


def relative_table(methods: dict) -> "pd.DataFrame":
    """Each method's accuracy at each budget minus the best baseline's there (points): the
    comparison the paper's claim is about, free of the data set's and model's level."""
    table = accuracy_table(methods)
    columns = [f"{f:g} of Fix(8)" for f in FRACTIONS]
    baselines = [label for label in LABELS if label != "MQGrad"]
    best = {c: max((table.loc[b, c] for b in baselines if table.loc[b, c] == table.loc[b, c]
                    and table.loc[b, c] is not None), default=None) for c in columns}
    import pandas as pd
    return pd.DataFrame({label: {c: (None if best[c] is None or table.loc[label, c] is None
                                     or table.loc[label, c] != table.loc[label, c] else float(table.loc[label, c] - best[c]))
                                 for c in columns} for label in LABELS}).T
