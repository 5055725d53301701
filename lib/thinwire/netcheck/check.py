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

from ..comm import NetworkModel
from ..experiment import RunConfig
from .cluster import Cluster
from .measure import compare, run_on_cluster

TOPOLOGIES = ("star", "ring_allreduce", "eventgrad_ring")


def topology_configs(workers: int, steps: int, model: str) -> dict[str, tuple[RunConfig, int]]:
    """topology -> (config, ranks): one rank per agent, so each agent has its own link."""
    base = dict(model=model, workers=workers, batch_size=32, steps=steps, train_samples=64 * workers * steps,
                eval_every=steps, eval_samples=200)
    return {"star": (RunConfig(algorithm="plump_dp", **base), workers + 1),
            "ring_allreduce": (RunConfig(algorithm="allreduce", **base), workers),
            "eventgrad_ring": (RunConfig(algorithm="eventgrad", push_policy="always", **base), workers)}


def netcheck(rates: list[float], workers: int = 3, steps: int = 12, delay_s: float = 0.0,
             model: str = "mlp(hidden=(64,))", skip: int = 2) -> list[dict]:
    """One row per (rate, topology): the sums over phases and steps >= ``skip`` of the
    measured and the predicted seconds, with the per-phase rows under ``phases``."""
    rows = []
    configs = topology_configs(workers, steps, model)
    with tempfile.TemporaryDirectory() as root:
        for rate in rates:
            with Cluster(workers + 1, rate, delay_s) as cluster:
                network = NetworkModel(f"shaped {rate:g} B/s", rate, delay_s)
                for name, (config, ranks) in configs.items():
                    result = run_on_cluster(config, cluster, ranks, Path(root) / f"{rate:g}")
                    phases = compare(result, network, skip)
                    measured = sum(p["measured_s"] for p in phases)
                    predicted = sum(p["predicted_s"] for p in phases)
                    rows.append({"topology": name, "rate_bytes_per_s": rate, "delay_s": delay_s, "ranks": ranks,
                                 "steps": steps - skip, "measured_s": measured, "predicted_s": predicted,
                                 "error_pct": 100 * (predicted - measured) / measured, "phases": phases})
    return rows


def write(rows: list[dict], path) -> None:
    """Atomically write the rows as JSON."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(rows, indent=1))
    os.replace(tmp, path)


def table(rows: list[dict]) -> str:
    lines = ["| topology | bandwidth MB/s | ranks | measured ms/step | model ms/step | model error |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['topology']} | {r['rate_bytes_per_s'] / 1e6:g} | {r['ranks']} | "
                     f"{1e3 * r['measured_s'] / r['steps']:.2f} | {1e3 * r['predicted_s'] / r['steps']:.2f} | "
                     f"{r['error_pct']:+.1f}% |")
    return "\n".join(lines)
