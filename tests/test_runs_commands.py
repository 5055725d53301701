"""``thinwire runs`` (compact and ``--wide``), ``runs diff A B`` and ``export KEY --csv DIR``."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from thinwire.cli import main
from thinwire.experiment import Result

TINY = ["--set", "model=mlp(hidden=(16,))", "--set", "steps=3", "--set", "train_samples=256", "--set",
        "eval_samples=100", "--set", "eval_every=3", "--set", "batch_size=16"]


@pytest.fixture
def two_runs(tmp_path, capsys):
    keys = []
    for codec in ("fp32", "'topk(ratio=0.1)'"):
        assert main(["run", *TINY, "--set", f"push_codec={codec}", "--results", str(tmp_path)]) == 0
        keys.append(json.loads(capsys.readouterr().out)["key"])
    return tmp_path, keys


def test_runs_shows_a_compact_table_and_every_column_when_wide(two_runs, capsys):
    root, keys = two_runs
    assert main(["runs", "--results", str(root)]) == 0
    header, *rows = capsys.readouterr().out.splitlines()
    assert header.split() == ["method", "key", "steps", "accuracy", "loss", "payload/step", "wall", "s", "date"]
    assert len(rows) == 2 and {k[:8] for k in keys} <= {word for row in rows for word in row.split()}
    assert sorted(row.split()[:3] for row in rows) == [["plump_dp", "push", "fp32"], ["plump_dp", "push", "topk(ratio=0.1)"]]
    assert main(["runs", "--results", str(root), "--wide"]) == 0
    assert {"host_cpu", "git_commit", "compute_seconds_per_step"} <= set(capsys.readouterr().out.split())


def test_runs_diff_shows_what_differs_and_both_summaries(two_runs, capsys):
    root, (fp32, topk) = two_runs
    assert main(["runs", "--results", str(root), "diff", fp32[:6], topk[:6]]) == 0
    lines = capsys.readouterr().out.splitlines()
    fields = [line.split()[0] for line in lines[1:]]
    assert fields[0] == "plump_dp.push_codec" and "topk(ratio=0.1)" in lines[1]
    assert not [f for f in fields if not f.startswith("summary.")][1:]  # only the codec differs
    assert "summary.final_accuracy" in fields and "summary.payload_per_step" in fields


def test_export_writes_the_per_step_metrics_and_the_ledger(two_runs, capsys):
    root, (fp32, _) = two_runs
    assert main(["export", fp32[:6], "--csv", str(root / "csv"), "--results", str(root)]) == 0
    result = Result.load(next(root.glob(f"{fp32}-*")))
    metrics, ledger = pd.read_csv(root / "csv" / "metrics.csv"), pd.read_csv(root / "csv" / "ledger.csv")
    assert len(metrics) == result.steps == 3 and list(metrics["loss"]) == pytest.approx(result.metrics["loss"])
    assert len(ledger) == len(result.ledger) and int(ledger["bytes"].sum()) == result.ledger.total_bytes(
        network_only=False)


@pytest.mark.parametrize("argv, said", [
    (["runs", "dif", "aaaa", "bbbb"], "the one action is `runs diff KEY_A KEY_B`"),
    (["runs", "diff", "aaaa", "bbbb"], "key='aaaa': no run in"),
    (["export", "zz", "--csv", "out"], "at least 4 hex digits"),
])
def test_a_wrong_runs_command_is_one_line(tmp_path, capsys, argv, said):
    assert main([*argv, "--results", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert said in err and err.count("\n") == 1


def test_a_key_with_two_backends_is_told_apart_by_its_folders_name(tmp_path, capsys):
    for backend in ("inprocess", "gloo"):
        (tmp_path / f"abcdef12-{backend}").mkdir()
    assert main(["runs", "--results", str(tmp_path), "diff", "abcd", "abcdef12-gloo"]) == 2
    assert "names 2 runs (abcdef12-gloo, abcdef12-inprocess): give more of the key, or the folder's name" in \
        capsys.readouterr().err
