"""Runs in MLflow: each finished run's config, per-step metrics, summary, provenance and ledger.

Off unless asked. ``THINWIRE_MLFLOW=1`` (or ``run(..., track="1")``, ``thinwire run
--mlflow``) logs to a local store, ``mlruns/`` beside ``results/``: MLflow's SQLite store
(``mlruns/mlflow.db``, artifacts under ``mlruns/artifacts/``), since MLflow 3 keeps its
plain-file store only for those who opt in; ``mlflow ui --backend-store-uri
sqlite:///mlruns/mlflow.db`` browses it. ``THINWIRE_MLFLOW=<tracking URI>`` (``http://host:5000``,
``sqlite:///path``, ``file:/path``) logs there. ``pip install thinwire[mlflow]`` installs it.

What a run records (experiment ``thinwire``, or ``$MLFLOW_EXPERIMENT_NAME``):
- params: the config, one per field (``<algorithm>.<field>`` for its section's);
- metrics: every per-step number at its step, and the summary as ``summary/<name>``;
- tags: ``thinwire.key``, ``thinwire.backend``, ``thinwire.folder``, and the provenance of the
  times as ``provenance.<name>``;
- artifacts: ``ledger.csv`` (one row a message) and ``result.json``.

A run is logged once: a result reused from the cache is logged the first time tracking
sees it, and not again (the folder tag is looked up first).
"""

from __future__ import annotations

import importlib
import json
import os
import tempfile
import time
from pathlib import Path

from ..paths import results_dir
from .catalog import flatten, method_label

ENV = "THINWIRE_MLFLOW"
EXPERIMENT = "thinwire"
OFF, ON = ("", "0", "false", "off", "no"), ("1", "true", "on", "yes")
MAX_PARAM = 6000  # characters MLflow keeps of a param's value
BATCH = 1000  # metrics per request (MLflow's limit)


def tracking_uri(setting: str | None = None) -> str | None:
    """Where runs are logged (None: not at all), from ``setting`` or else ``$THINWIRE_MLFLOW``;
    an error naming what is needed when MLflow is not installed, before any training starts."""
    value = (os.environ.get(ENV, "") if setting is None else str(setting)).strip()
    if value.lower() in OFF:
        return None
    try:
        importlib.import_module("mlflow")
    except ImportError:
        raise ValueError(f"MLflow tracking ({ENV}={value!r}) needs MLflow: pip install thinwire[mlflow] "
                         f"(or unset {ENV})") from None
    return _local_uri() if value.lower() in ON else value


def _local_uri() -> str:
    return f"sqlite:///{local_store() / 'mlflow.db'}"


def local_store() -> Path:
    """``mlruns/`` beside the results folder."""
    return results_dir().resolve().parent / "mlruns"


def log_run(result, uri: str) -> str:
    """Log ``result`` (saved, with ``result.folder``) to the MLflow store at ``uri``; its run id."""
    from mlflow import MlflowClient
    from mlflow.entities import Metric, Param, RunTag
    if uri == _local_uri():
        local_store().mkdir(parents=True, exist_ok=True)
    client = MlflowClient(tracking_uri=uri)
    experiment = _experiment(client, uri)
    folder = Path(result.folder)
    found = client.search_runs([experiment], filter_string=f"tags.`thinwire.folder` = '{folder.name}'", max_results=1)
    if found:
        return found[0].info.run_id
    run = client.create_run(experiment, run_name=method_label(result.config.to_dict()), tags={
        "thinwire.key": result.config.key(), "thinwire.backend": result.backend, "thinwire.folder": folder.name})
    now = int(time.time() * 1000)
    params = [Param(k, str(v)[:MAX_PARAM]) for k, v in sorted(flatten(result.config.to_dict()).items())]
    tags = [RunTag(f"provenance.{k}", json.dumps(v) if not isinstance(v, str) else v)
            for k, v in sorted(result.provenance.items())]
    metrics = [Metric(f"summary/{k}", float(v), now, 0) for k, v in sorted(result.summary.items()) if _number(v)]
    steps = result.metrics.get("step") or list(range(result.steps))
    for name, values in sorted(result.metrics.items()):
        if name != "step" and isinstance(values, list):
            metrics += [Metric(name, float(v), now, int(s)) for s, v in zip(steps, values) if _number(v)]
    for i in range(0, max(len(params), 1), 100):
        client.log_batch(run.info.run_id, params=params[i:i + 100], tags=tags if i == 0 else [])
    for i in range(0, len(metrics), BATCH):
        client.log_batch(run.info.run_id, metrics=metrics[i:i + BATCH])
    with tempfile.TemporaryDirectory() as tmp:
        import pandas as pd
        ledger = Path(tmp) / "ledger.csv"
        pd.DataFrame(result.ledger.columns).to_csv(ledger, index=False)
        client.log_artifact(run.info.run_id, str(ledger))
    if (folder / "result.json").exists():
        client.log_artifact(run.info.run_id, str(folder / "result.json"))
    client.set_terminated(run.info.run_id)
    return run.info.run_id


def _experiment(client, uri: str) -> str:
    name = os.environ.get("MLFLOW_EXPERIMENT_NAME") or EXPERIMENT
    found = client.get_experiment_by_name(name)
    if found is not None:
        return found.experiment_id
    local = uri == _local_uri()
    return client.create_experiment(name, artifact_location=(local_store() / "artifacts").as_uri() if local else None)


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and v == v
