"""``thinwire netcheck``: the network model against a shaped network, for the three patterns
the algorithms use: a star (Plump-DP's parameter server, K workers and a server), a ring
all-reduce (K workers) and the EventGraD ring (K peers, every tensor sent each step:
D-PSGD). Each runs on an emulated cluster (``cluster.py``) at every bandwidth asked for; the
rows set each phase's measured time beside the model's prediction for the same ledger.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from ..comm import TCP_ETHERNET
from ..experiment import RunConfig
from .cluster import Cluster
from .fit import corrected, fit_fixed_costs, shaped
from .measure import run_on_cluster, total

TOPOLOGIES = ("star", "ring_allreduce", "eventgrad_ring")


def topology_configs(workers: int, steps: int, model: str) -> dict[str, tuple[RunConfig, int]]:
    """topology -> (config, ranks): one rank per agent, so each agent has its own link."""
    base = dict(model=model, workers=workers, batch_size=32, steps=steps, train_samples=64 * workers * steps,
                eval_every=steps, eval_samples=200)
    return {"star": (RunConfig(algorithm="plump_dp", **base), workers + 1),
            "ring_allreduce": (RunConfig(algorithm="allreduce", **base), workers),
            "eventgrad_ring": (RunConfig(algorithm="eventgrad", push_policy="always", **base), workers)}


def _runs(configs, rates, delay_s, workers, root, repeats) -> dict[float, dict[str, list]]:
    """rate -> topology -> its Results, ``repeats`` each: every repeat runs every rate in turn
    on a cluster built afresh, so a slow spell of the machine does not fall on one rate."""
    out = {rate: {name: [] for name in configs} for rate in rates}
    for _ in range(repeats):
        for rate in out:
            with Cluster(workers + 1, rate, delay_s) as cluster:
                for name, (config, ranks) in configs.items():
                    out[rate][name].append(run_on_cluster(config, cluster, ranks, Path(root) / f"{rate:g}"))
    return out


def netcheck(rates: list[float], workers: int = 3, steps: int = 30, delay_s: float = 0.0,
             model: str = "mlp(hidden=(64,))", skip: int = 2, calibrate: float = 25e6, repeats: int = 2) -> dict:
    """Fit the model's fixed costs at ``calibrate`` B/s, then check it at every rate of
    ``rates``: one row per (rate, topology) with, over steps >= ``skip`` of ``repeats`` runs,
    the measured seconds (``measure.total``: the steps times the median step), the plain
    model's (bytes over the link) and the corrected model's (frames' headers and the fitted
    fixed costs), with the per-phase rows of the first run under ``phases``."""
    if not (isinstance(repeats, int) and repeats >= 1):
        raise ValueError(f"repeats={repeats!r} is not allowed: it must be an int >= 1")
    configs = topology_configs(workers, steps, model)
    with tempfile.TemporaryDirectory() as root:
        results = _runs(configs, list(dict.fromkeys([calibrate, *rates])), delay_s, workers, root, repeats)
    fitted = {name: total(runs, shaped(calibrate, delay_s), skip) for name, runs in results[calibrate].items()}
    latency_s, message_latency_s = fit_fixed_costs(list(fitted.values()))
    rows = []
    for rate in rates:
        network = corrected(shaped(rate, delay_s), latency_s, message_latency_s)
        for name, runs in results[rate].items():
            row = total(runs, network, skip)
            measured, predicted = row["measured_s"], row["predicted_s"]
            naive = row["bytes_s"] / (1 + TCP_ETHERNET)
            rows.append({"topology": name, "rate_bytes_per_s": rate, "delay_s": delay_s, "ranks": configs[name][1],
                         "steps": row["step_count"], "measured_s": measured, "predicted_s": predicted,
                         "error_pct": 100 * (predicted - measured) / measured,
                         "plain_predicted_s": naive, "plain_error_pct": 100 * (naive - measured) / measured,
                         "phases": row["phases"]})
    return {"calibrated_at_bytes_per_s": calibrate, "repeats": repeats, "latency_s": latency_s,
            "message_latency_s": message_latency_s, "wire_overhead": TCP_ETHERNET, "calibration": fitted,
            "rows": rows}


def write(rows, path) -> None:
    """Atomically write the rows as JSON."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(rows, indent=1))
    os.replace(tmp, path)


def table(report: dict) -> str:
    lines = [f"fixed costs fitted at {report['calibrated_at_bytes_per_s'] / 1e6:g} MB/s: "
             f"{1e3 * report['latency_s']:.3f} ms per phase, "
             f"{1e3 * report['message_latency_s']:.3f} ms per message (per peer, out and in added); "
             f"frames' headers {100 * report['wire_overhead']:.1f}%", "",
             "| topology | bandwidth MB/s | ranks | measured ms/step | model ms/step | error | plain model ms/step | error |",
             "|---|---|---|---|---|---|---|---|"]
    for r in report["rows"]:
        lines.append(f"| {r['topology']} | {r['rate_bytes_per_s'] / 1e6:g} | {r['ranks']} | "
                     f"{1e3 * r['measured_s'] / r['steps']:.2f} | {1e3 * r['predicted_s'] / r['steps']:.2f} | "
                     f"{r['error_pct']:+.1f}% | {1e3 * r['plain_predicted_s'] / r['steps']:.2f} | "
                     f"{r['plain_error_pct']:+.1f}% |")
    return "\n".join(lines)
