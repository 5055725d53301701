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
from .measure import compare, run_on_cluster

TOPOLOGIES = ("star", "ring_allreduce", "eventgrad_ring")


def topology_configs(workers: int, steps: int, model: str) -> dict[str, tuple[RunConfig, int]]:
    """topology -> (config, ranks): one rank per agent, so each agent has its own link."""
    base = dict(model=model, workers=workers, batch_size=32, steps=steps, train_samples=64 * workers * steps,
                eval_every=steps, eval_samples=200)
    return {"star": (RunConfig(algorithm="plump_dp", **base), workers + 1),
            "ring_allreduce": (RunConfig(algorithm="allreduce", **base), workers),
            "eventgrad_ring": (RunConfig(algorithm="eventgrad", push_policy="always", **base), workers)}


def _run(configs, rate, delay_s, workers, root, skip, networks) -> dict[str, tuple[int, list[dict]]]:
    """topology -> (ranks, per-phase rows of ``compare`` against ``networks[topology]``)."""
    out = {}
    with Cluster(workers + 1, rate, delay_s) as cluster:
        for name, (config, ranks) in configs.items():
            result = run_on_cluster(config, cluster, ranks, Path(root) / f"{rate:g}")
            network = networks[name]
            out[name] = (ranks, compare(result, network, skip))
    return out


def netcheck(rates: list[float], workers: int = 3, steps: int = 30, delay_s: float = 0.0,
             model: str = "mlp(hidden=(64,))", skip: int = 2, calibrate: float = 25e6) -> dict:
    """Fit the model's fixed costs at ``calibrate`` B/s, then check it at every rate of
    ``rates``: one row per (rate, topology) with the sums over phases and steps >= ``skip`` of
    the measured seconds, the plain model's (bytes over the link) and the corrected model's
    (frames' headers and the fitted fixed costs), with the per-phase rows under ``phases``."""
    configs = topology_configs(workers, steps, model)
    with tempfile.TemporaryDirectory() as root:
        fitted = _run(configs, calibrate, delay_s, workers, root, skip, {name: shaped(calibrate, delay_s) for name in configs})
        latency_s, message_latency_s = fit_fixed_costs([p for _, phases in fitted.values() for p in phases])
        rows = []
        for rate in rates:
            network = corrected(shaped(rate, delay_s), latency_s, message_latency_s)
            networks = {name: network for name in configs}
            for name, (ranks, phases) in _run(configs, rate, delay_s, workers, root, skip, networks).items():
                measured = sum(p["measured_s"] for p in phases)
                predicted = sum(p["predicted_s"] for p in phases)
                naive = sum(p["bytes_s"] for p in phases) / (1 + TCP_ETHERNET)
                rows.append({"topology": name, "rate_bytes_per_s": rate, "delay_s": delay_s, "ranks": ranks,
                             "steps": steps - skip, "measured_s": measured, "predicted_s": predicted,
                             "error_pct": 100 * (predicted - measured) / measured,
                             "plain_predicted_s": naive, "plain_error_pct": 100 * (naive - measured) / measured,
                             "phases": phases})
    return {"calibrated_at_bytes_per_s": calibrate, "latency_s": latency_s, "message_latency_s": message_latency_s,
            "wire_overhead": TCP_ETHERNET, "calibration": {k: phases for k, (_, phases) in fitted.items()},
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
             f"{1e3 * report['message_latency_s']:.3f} ms per peer; "
             f"frames' headers {100 * report['wire_overhead']:.1f}%", "",
             "| topology | bandwidth MB/s | ranks | measured ms/step | model ms/step | error | plain model ms/step | error |",
             "|---|---|---|---|---|---|---|---|"]
    for r in report["rows"]:
        lines.append(f"| {r['topology']} | {r['rate_bytes_per_s'] / 1e6:g} | {r['ranks']} | "
                     f"{1e3 * r['measured_s'] / r['steps']:.2f} | {1e3 * r['predicted_s'] / r['steps']:.2f} | "
                     f"{r['error_pct']:+.1f}% | {1e3 * r['plain_predicted_s'] / r['steps']:.2f} | "
                     f"{r['plain_error_pct']:+.1f}% |")
    return "\n".join(lines)
