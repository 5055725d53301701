"""The MLflow logger (``experiment/tracking.py``): a run logged to a local store reads back
through ``mlflow.search_runs`` with its params, metrics, tags and ledger artifact."""

from __future__ import annotations

import json

import pytest

from thinwire.cli import main
from thinwire.experiment import RunConfig, run
from thinwire.experiment.tracking import tracking_uri

TINY = dict(model="mlp(hidden=(16,))", steps=3, train_samples=256, eval_samples=100, eval_every=3, batch_size=16)


@pytest.mark.long  # make test-long: MLflow's import and its store's creation take about 8 s
def test_a_run_logged_to_mlflow_reads_back_with_params_metrics_and_ledger(tmp_path, monkeypatch, capsys):
    mlflow = pytest.importorskip("mlflow", reason="thinwire[mlflow] is in requirements.lock; absent only outside make setup")
    monkeypatch.setenv("THINWIRE_RESULTS", str(tmp_path / "results"))
    monkeypatch.setenv("THINWIRE_MLFLOW", "1")
    config = RunConfig(**TINY).replace(push_codec="topk(ratio=0.1)")
    result = run(config)
    uri = f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}"
    assert tracking_uri() == uri  # "1": mlruns/ beside the results folder
    mlflow.set_tracking_uri(uri)
    runs = mlflow.search_runs(experiment_names=["thinwire"])
    assert len(runs) == 1
    row = runs.iloc[0]
    assert row["tags.thinwire.key"] == config.key() and row["tags.thinwire.backend"] == "inprocess"
    assert row["params.plump_dp.push_codec"] == "topk(ratio=0.1)" and row["params.steps"] == "3"
    assert row["metrics.summary/payload_bytes"] == result.summary["payload_bytes"]
    assert row["tags.provenance.host_cpu"] == result.provenance["host_cpu"]
    client = mlflow.MlflowClient(uri)
    losses = client.get_metric_history(row["run_id"], "loss")
    assert [m.step for m in losses] == result.metrics["step"]
    assert [m.value for m in losses] == pytest.approx(result.metrics["loss"])
    assert {a.path for a in client.list_artifacts(row["run_id"])} == {"ledger.csv", "result.json"}
    ledger = mlflow.artifacts.load_text(f"{row['artifact_uri']}/ledger.csv").splitlines()
    assert len(ledger) == 1 + len(result.ledger) and ledger[0].startswith("step,")
    run(config)  # reused from the cache: already logged, not again
    assert len(mlflow.search_runs(experiment_names=["thinwire"])) == 1
    other = tmp_path / "elsewhere.db"  # the command line's --mlflow URI; a reused result is logged once there
    monkeypatch.chdir(tmp_path)  # a store the user names keeps artifacts in ./mlruns (MLflow's default root)
    assert main(["run", "--set", "push_codec='topk(ratio=0.1)'", *[f"--set={k}={v!r}" for k, v in TINY.items()],
                 "--mlflow", f"sqlite:///{other}"]) == 0
    assert json.loads(capsys.readouterr().out)["key"] == config.key()
    mlflow.set_tracking_uri(f"sqlite:///{other}")
    assert len(mlflow.search_runs(experiment_names=["thinwire"])) == 1


def test_tracking_asked_for_without_a_store_or_with_a_bad_setting_is_clear(monkeypatch):
    import sys
    import types
    monkeypatch.delenv("THINWIRE_MLFLOW", raising=False)
    assert tracking_uri() is None and tracking_uri("0") is None
    monkeypatch.setitem(sys.modules, "mlflow", types.ModuleType("mlflow"))  # installed (its import is seconds)
    assert tracking_uri("http://127.0.0.1:5000") == "http://127.0.0.1:5000"
    monkeypatch.setitem(sys.modules, "mlflow", None)  # as if not installed
    with pytest.raises(ValueError, match=r"THINWIRE_MLFLOW='1'\) needs MLflow: pip install thinwire\[mlflow\]"):
        tracking_uri("1")
