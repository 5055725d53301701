"""Hostile and damaged files in a results folder: planted pickles never run, damaged
checkpoints are set aside with a warning naming them, damaged results are recomputed."""

import json
import pickle

import pytest
import torch

from thinwire.experiment import RunConfig, result_folder, run
from thinwire.experiment.checkpoint import Checkpoint
from thinwire.experiment.timing import untimed

TINY = dict(model="mlp(hidden=(16,))", steps=9, train_samples=512, eval_every=3, eval_samples=200, batch_size=16)


def _numbers(result):
    return untimed(result.metrics)


class _Planted:
    """Unpickling this creates a marker file: what an attacker's checkpoint would do."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


@pytest.fixture(scope="module")
def whole(tmp_path_factory):
    config = RunConfig(**TINY, push_codec="ef(topk(ratio=0.05))")
    return config, run(config, root=tmp_path_factory.mktemp("whole"))


def _cut_run(config, root, interrupt_at):
    """A run interrupted after its step-6 checkpoint: returns the checkpoint's path."""
    resume = interrupt_at(7)
    with pytest.raises(KeyboardInterrupt):
        run(config, root=root, checkpoint_every=3)
    resume()
    path = result_folder(config, root=root) / "checkpoint.pt"
    assert path.exists()
    return path


def test_a_planted_pickle_runs_no_code_with_the_right_key_or_not(tmp_path, whole):
    config, reference = whole
    marker = tmp_path / "pwned"
    folder = result_folder(config, root=tmp_path)
    folder.mkdir(parents=True)
    for key in ("not-this-key", config.key()):
        with open(folder / "checkpoint.pt", "wb") as f:
            torch.save({"key": key, "step": 3, "payload": _Planted(marker)}, f)
        with pytest.warns(UserWarning, match="checkpoint.pt"):
            result = run(config, root=tmp_path, reuse=False)
        assert not marker.exists()
        assert _numbers(result) == _numbers(reference)
        assert (folder / "checkpoint.pt.damaged").exists()


@pytest.mark.parametrize("damage", ["garbage", "empty", "truncated", "empty state", "state that does not fit"])
def test_a_damaged_checkpoint_is_set_aside_and_the_run_completes(tmp_path, whole, interrupt_at, damage):
    config, reference = whole
    path = _cut_run(config, tmp_path, interrupt_at)
    good = path.read_bytes()
    if damage == "garbage":
        path.write_bytes(b"\x80\x04garbage" * 100)
    elif damage == "empty":
        path.write_bytes(b"")
    elif damage == "truncated":
        path.write_bytes(good[: len(good) // 2])
    elif damage == "empty state":
        torch.save({"key": config.key()}, path)
    else:
        state = torch.load(path, weights_only=True)
        state["algorithm"] = {"nonsense": torch.zeros(1)}
        torch.save(state, path)
    with pytest.warns(UserWarning, match=r"checkpoint\.pt"):
        result = run(config, root=tmp_path, checkpoint_every=3)
    assert _numbers(result) == _numbers(reference)
    assert result.ledger.rows() == reference.ledger.rows()


def test_a_checkpoint_holds_only_tensors_and_plain_data(tmp_path, whole, interrupt_at):
    config, _ = whole
    path = _cut_run(config, tmp_path, interrupt_at)
    state = torch.load(path, weights_only=True)  # raises on anything but plain data
    assert state["key"] == config.key() and state["step"] == 6


@pytest.mark.parametrize("damage", ["truncated result", "garbage ledger", "missing ledger", "pickled ledger"])
def test_a_damaged_result_is_named_and_recomputed(tmp_path, whole, damage):
    config, reference = whole
    run(config, root=tmp_path)
    folder = result_folder(config, root=tmp_path)
    if damage == "truncated result":
        text = (folder / "result.json").read_text()
        (folder / "result.json").write_text(text[: len(text) // 2])
        name = "result.json"
    elif damage == "garbage ledger":
        (folder / "ledger.npz").write_bytes(b"PK\x03\x04 not a zip")
        name = "ledger.npz"
    elif damage == "missing ledger":
        (folder / "ledger.npz").unlink()
        name = "ledger.npz"
    else:
        import numpy as np
        np.save(folder / "ledger.npz", np.array([object()], dtype=object), allow_pickle=True)
        (folder / "ledger.npz.npy").replace(folder / "ledger.npz")
        name = "ledger.npz"
    with pytest.warns(UserWarning, match=name) as caught:
        result = run(config, root=tmp_path)
    _one_line(caught)
    assert _numbers(result) == _numbers(reference)
    json.loads((folder / "result.json").read_text())  # rewritten whole


def _one_line(caught) -> None:
    """Each warning as Python prints it is one line (no source line of thinwire's after it)."""
    import warnings
    for w in caught:
        text = warnings.formatwarning(w.message, w.category, w.filename, w.lineno, w.line)
        assert text.startswith("thinwire:0: ThinwireWarning: ") and text.count("\n") == 1, text


def test_distributed_checkpoint_falls_back_to_the_older_step(tmp_path):
    ck = Checkpoint(tmp_path, "k", 5, rank=0, world_size=2)
    ck.save({"step": 5, "rows": [], "algorithm": {}, "streams": {}, "ledger": {}})
    ck.save({"step": 10, "rows": [], "algorithm": {}, "streams": {}, "ledger": {}})
    ck.path(10).write_bytes(pickle.dumps("garbage")[:3])
    with pytest.warns(UserWarning, match="step10") as caught:
        assert ck.load(10) is None
    _one_line(caught)
    assert ck.steps() == [5] and ck.load(5)["step"] == 5


def test_orphan_temporaries_go_at_once_on_a_cache_hit_and_live_ones_stay(tmp_path, whole):
    import os
    import subprocess
    from thinwire.experiment.result import _HOST
    config, _ = whole
    run(config, root=tmp_path)
    folder = result_folder(config, root=tmp_path)
    dead = subprocess.Popen(["true"])
    dead.wait()  # its pid names a writer that is gone
    orphan = folder / f".result.json.{_HOST}.{dead.pid}.abc123.tmp"
    live = folder / f".result.json.{_HOST}.{os.getpid()}.def456.tmp"
    old_style = folder / ".ledger.npz.xyz.tmp"
    for p in (orphan, live, old_style):
        p.write_bytes(b"partial")
    run(config, root=tmp_path)  # a cache hit, within a second of the interruption
    assert not orphan.exists() and live.exists() and old_style.exists()


@pytest.mark.parametrize("settings, message", [
    (dict(model="mlp(hidden=(100_000_000,))"), "GiB"),
    (dict(workers=1024, batch_size=8, model="mlp(hidden=(1024, 1024))"), "GiB"),
])
def test_a_run_that_cannot_fit_is_refused_with_the_estimate_before_data_loads(tmp_path, monkeypatch, settings, message):
    import thinwire.experiment.runner as runner
    monkeypatch.setattr(runner, "_prepare_data", lambda *a: pytest.fail("data loaded"))
    with pytest.raises(ValueError, match=f"this run needs about .* {message}.*more than"):
        run(RunConfig(**{**TINY, "train_samples": 0, **settings}), root=tmp_path)


@pytest.mark.parametrize("bad", ["a_file", "/proc/no_such_folder"])
def test_an_unusable_results_folder_is_refused_before_training(tmp_path, monkeypatch, bad):
    import thinwire.experiment.runner as runner
    (tmp_path / "a_file").write_text("x")
    monkeypatch.setattr(runner, "_prepare_data", lambda *a: pytest.fail("data loaded"))
    root = tmp_path / bad if bad == "a_file" else bad
    with pytest.raises(ValueError, match="is not usable"):
        run(RunConfig(**TINY), root=root)
