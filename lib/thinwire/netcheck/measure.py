"""Run a config on an emulated cluster and set the network model's prediction beside what the
transport measured.

Each rank runs ``python -m thinwire run --backend gloo`` in its own node's namespace (rank r
on node r, so each agent has its own shaped link when there are as many ranks as agents),
with torch.distributed's environment set by hand (``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR`` =
node 0) and gloo bound to ``eth0``. The measured time of a (step, phase) is the transport's
span: from the last rank's entry into the exchange to the last rank's exit
(``comm.transport.phase_spans``), so compute skew between ranks is not counted. The
prediction is the network model's ``phase_seconds`` for the same ledger rows.

A step's communication is the sum of its phases' spans, and a run's measured time is the
steps times the median of those sums (``total``): with 3-4 ranks on 2 cores a span now and
then waits for a core, so the median of one phase's spans moves between runs (a ring
all-reduce phase's fixed cost ranged 0.3-2.4 ms over four runs at 10 and 50 MB/s); the
median of a step's total moves less.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np

from ..comm import NetworkModel
from ..experiment import RunConfig, cached
from .cluster import Cluster

PORT = 29517


def run_config(config: RunConfig, cluster: Cluster, root, commands, timeout_s: float, what: str):
    """Write ``config`` to a file under ``root``, run ``commands(path)`` -> (node -> argv, node ->
    env) on the cluster, and return the Result rank 0 wrote."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    path = Path(tempfile.mkstemp(suffix=".json", dir=root)[1])
    path.write_text(json.dumps(config.to_dict()))
    try:
        cluster.run_all(*commands(path), timeout_s, what)
    finally:
        path.unlink(missing_ok=True)
    result = cached(config, "gloo", root)
    if result is None:
        raise RuntimeError(f"{what} finished but no result for {config.key()} is in {root}")
    return result


def run_on_cluster(config: RunConfig, cluster: Cluster, ranks: int, root, timeout_s: float = 600):
    """The Result of ``config`` run by ``ranks`` gloo processes on nodes 0..ranks-1."""
    if ranks > cluster.nodes:
        raise ValueError(f"ranks={ranks} is not allowed: the cluster has {cluster.nodes} nodes")

    def commands(path):
        argv = [sys.executable, "-m", "thinwire", "run", "--config", str(path), "--backend", "gloo", "--no-reuse",
                "--results", str(root), "--timeout", "120"]
        envs = {r: dict(os.environ, RANK=str(r), WORLD_SIZE=str(ranks), LOCAL_RANK="0", LOCAL_WORLD_SIZE="1",
                        MASTER_ADDR=cluster.address(0), MASTER_PORT=str(PORT), GLOO_SOCKET_IFNAME="eth0",
                        OMP_NUM_THREADS="1", NUMBA_NUM_THREADS="1", THINWIRE_PROGRESS="0") for r in range(ranks)}
        return {r: argv for r in range(ranks)}, envs

    return run_config(config, cluster, root, commands, timeout_s, "the run on the emulated cluster")


def _row(groups, keys, network: NetworkModel, measured: float) -> dict:
    """Measured and predicted seconds over the (step, phase) ``keys``, and what a fit of the
    fixed costs needs: the exchanges, the busiest node's messages summed over them and the
    model's time for the bytes alone."""
    bytes_only = replace(network, latency_s=0.0, message_latency_s=0.0)
    predicted = sum(network.phase_seconds(groups[k]) for k in keys)
    return {"steps": len(keys), "measured_s": measured, "predicted_s": predicted,
            "error_pct": 100 * (predicted - measured) / measured if measured else None,
            "bytes_s": sum(bytes_only.phase_seconds(groups[k]) for k in keys),
            "messages": sum(network.messages_paid(groups[k]) for k in keys)}


def compare(result, network: NetworkModel, skip: int = 2) -> list[dict]:
    """Per phase, over steps >= ``skip`` (the first steps open connections): measured seconds
    (the steps times the median span), the model's, and the fit's inputs (``_row``)."""
    groups = result.ledger.by_phase_step()
    phases = sorted({p for _, p in groups}, key=lambda p: (p.rstrip("0123456789"), len(p), p))
    ledger_rows = result.ledger.rows()
    rows = []
    for phase in phases:
        spans = result.metrics.get(f"{phase}_span_seconds") or []
        steps = [s for s in range(skip, len(spans)) if spans[s] is not None and (s, phase) in groups]
        measured = len(steps) * float(np.median([spans[s] for s in steps])) if steps else 0.0
        payload = sum(row[6] for row in ledger_rows if row[1] == phase and row[0] >= skip)
        row = _row(groups, [(s, phase) for s in steps], network, measured)
        rows.append({"phase": phase, "steps": row.pop("steps"), "payload_bytes": payload, **row})
    return rows


def total(results, network: NetworkModel, skip: int = 2) -> dict:
    """One config's runs (a Result, or several with one ledger) as one row over the steps >=
    ``skip`` that exchange (``step_count``): ``measured_s`` is their count times the median of
    a step's summed spans, pooled over the runs' steps that have a span for every phase
    (``timed`` of them); ``steps`` counts the (step, phase) exchanges (the fit's phases); the
    first run's per-phase rows under ``phases``."""
    results = results if isinstance(results, (list, tuple)) else [results]
    first = results[0]
    if any(r.ledger.rows() != first.ledger.rows() for r in results[1:]):
        raise ValueError("total pools runs of one config: their ledgers differ")
    groups = first.ledger.by_phase_step()
    exchanges: dict[int, list[str]] = {}
    for step, phase in sorted(groups):
        if step >= skip:
            exchanges.setdefault(step, []).append(phase)
    sums = []
    for result in results:
        spans = {p: result.metrics.get(f"{p}_span_seconds") or [] for _, p in groups}
        sums += [sum(spans[p][s] for p in ps) for s, ps in exchanges.items()
                 if all(s < len(spans[p]) and spans[p][s] is not None for p in ps)]
    measured = len(exchanges) * float(np.median(sums)) if sums else 0.0
    keys = [(s, p) for s, ps in exchanges.items() for p in ps]
    return {**_row(groups, keys, network, measured), "step_count": len(exchanges), "timed": len(sums),
            "phases": compare(first, network, skip)}
