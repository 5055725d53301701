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
# A bandwidth counts as checked while the model's time stays this close to the measured one
# (``validated_max``); fit.py records ring errors of -10 to -20% at 50 MB/s.
TOLERANCE_PCT = 20.0
# The calibration bandwidth runs this many times the repeats: the fitted cost per message
# moved from 0.92 to 1.12 ms between two runs of 2 repeats, and every row's error with it.
CALIBRATION_REPEATS = 2


def topology_configs(workers: int, steps: int, model: str) -> dict[str, tuple[RunConfig, int]]:
    """topology -> (config, ranks): one rank per agent, so each agent has its own link."""
    base = dict(model=model, workers=workers, batch_size=32, steps=steps, train_samples=64 * workers * steps,
                eval_every=steps, eval_samples=200)
    return {"star": (RunConfig(algorithm="plump_dp", **base), workers + 1),
            "ring_allreduce": (RunConfig(algorithm="allreduce", **base), workers),
            "eventgrad_ring": (RunConfig(algorithm="eventgrad", push_policy="always", **base), workers)}


def _runs(configs, links, workers, root, repeats) -> dict[tuple[float, float], dict[str, list]]:
    """(delay, rate) -> topology -> its Results, ``repeats[link]`` each: every round runs every
    link still short of its repeats in turn, on a cluster built afresh, so a slow spell of the
    machine does not fall on one."""
    out = {link: {name: [] for name in configs} for link in links}
    for round_ in range(max(repeats.values())):
        for delay_s, rate in [link for link in out if round_ < repeats[link]]:
            with Cluster(workers + 1, rate, delay_s) as cluster:
                for name, (config, ranks) in configs.items():
                    out[delay_s, rate][name].append(
                        run_on_cluster(config, cluster, ranks, Path(root) / f"{rate:g}-{delay_s:g}"))
    return out


def netcheck(rates: list[float], workers: int = 3, steps: int = 30, delays: tuple[float, ...] = (0.0,),
             model: str = "mlp(hidden=(64,))", skip: int = 2, calibrate: float = 25e6, repeats: int = 2) -> dict:
    """Fit the model's fixed costs at ``calibrate`` B/s with no added delay (over
    ``CALIBRATION_REPEATS`` x ``repeats`` runs), then check it at
    every one-way delay of ``delays`` and rate of ``rates``: one row per (delay, rate,
    topology) with, over steps >= ``skip`` of ``repeats`` runs, the measured seconds
    (``measure.total``: the steps times the median step), the plain model's (bytes over the
    link) and the corrected model's (frames' headers, the fitted fixed costs and the delays an
    exchange pays, ``fit.exchange_delays``), with the per-phase rows of the first run under
    ``phases``."""
    if not (isinstance(repeats, int) and repeats >= 1):
        raise ValueError(f"repeats={repeats!r} is not allowed: it must be an int >= 1")
    if not delays or not all(isinstance(d, (int, float)) and 0 <= d <= 1 for d in delays):
        raise ValueError(f"delays={delays!r} is not allowed: one or more one-way delays in seconds, each in 0..1")
    configs = topology_configs(workers, steps, model)
    checked = list(dict.fromkeys((float(d), rate) for d in delays for rate in rates))
    links = list(dict.fromkeys([(0.0, calibrate), *checked]))
    visits = {link: repeats for link in links}
    visits[0.0, calibrate] = CALIBRATION_REPEATS * repeats
    with tempfile.TemporaryDirectory() as root:
        results = _runs(configs, links, workers, root, visits)
    fitted = {name: total(runs, shaped(calibrate), skip) for name, runs in results[0.0, calibrate].items()}
    latency_s, message_latency_s = fit_fixed_costs(list(fitted.values()))
    rows = []
    for delay_s, rate in checked:
        for name, runs in results[delay_s, rate].items():
            network = corrected(shaped(rate, delay_s, configs[name][1]), latency_s, message_latency_s)
            row = total(runs, network, skip)
            measured, predicted = row["measured_s"], row["predicted_s"]
            naive = row["bytes_s"] / (1 + TCP_ETHERNET)
            rows.append({"topology": name, "rate_bytes_per_s": rate, "delay_s": delay_s, "ranks": configs[name][1],
                         "steps": row["step_count"], "exchanges": row["steps"], "measured_s": measured, "predicted_s": predicted,
                         "error_pct": 100 * (predicted - measured) / measured,
                         "plain_predicted_s": naive, "plain_error_pct": 100 * (naive - measured) / measured,
                         "phases": row["phases"]})
    return {"calibrated_at_bytes_per_s": calibrate, "repeats": repeats,
            "calibration_repeats": visits[0.0, calibrate], "latency_s": latency_s,
            "message_latency_s": message_latency_s, "wire_overhead": TCP_ETHERNET, "calibration": fitted,
            "rows": rows}


def validated_max(report: dict, tolerance_pct: float = TOLERANCE_PCT) -> float | None:
    """The highest checked bandwidth (bytes/s) up to which every row of ``report`` (every
    topology and delay at it and at each lower bandwidth) has the corrected model within
    ``tolerance_pct`` of the measured time; None when the lowest already misses. Above it,
    a price is the model's alone."""
    rates = sorted({r["rate_bytes_per_s"] for r in report["rows"]})
    top = None
    for rate in rates:
        if any(abs(r["error_pct"]) > tolerance_pct for r in report["rows"] if r["rate_bytes_per_s"] == rate):
            break
        top = rate
    return top


def write(rows, path) -> None:
    """Atomically write the rows as JSON."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(rows, indent=1))
    os.replace(tmp, path)


def table(report: dict) -> str:
    lines = [f"fixed costs fitted at {report['calibrated_at_bytes_per_s'] / 1e6:g} MB/s and no added delay: "
             f"{1e3 * report['latency_s']:.3f} ms per phase, "
             f"{1e3 * report['message_latency_s']:.3f} ms per message (per peer, out and in added); "
             f"frames' headers {100 * report['wire_overhead']:.1f}%; a one-way delay paid 2 x ranks times a phase", "",
             "| topology | bandwidth MB/s | one-way delay ms | ranks | measured ms/step | model ms/step | error | "
             "plain model ms/step | error |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in report["rows"]:
        lines.append(f"| {r['topology']} | {r['rate_bytes_per_s'] / 1e6:g} | {1e3 * r['delay_s']:g} | "
                     f"{r['ranks']} | "
                     f"{1e3 * r['measured_s'] / r['steps']:.2f} | {1e3 * r['predicted_s'] / r['steps']:.2f} | "
                     f"{r['error_pct']:+.1f}% | {1e3 * r['plain_predicted_s'] / r['steps']:.2f} | "
                     f"{r['plain_error_pct']:+.1f}% |")
    return "\n".join(lines)
