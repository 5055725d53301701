"""run(): determinism, caching, resume, and the two transports agreeing on Plump-DP."""

import os

import pytest

from thinwire.experiment import RunConfig, cached, result_folder, run
from thinwire.experiment.launch import launch
from thinwire.experiment.timing import untimed

TINY = dict(model="mlp(hidden=(32,))", steps=12, train_samples=1024, eval_every=6, eval_samples=500, batch_size=16)


def _numbers(result):
    return untimed(result.metrics)


def test_two_identical_runs_give_identical_metrics(tmp_path):
    config = RunConfig(**TINY, push_codec="ef(topk(ratio=0.05))")
    a = run(config, root=tmp_path / "a")
    b = run(config, root=tmp_path / "b")
    assert _numbers(a) == _numbers(b)
    assert a.ledger.rows() == b.ledger.rows()
    assert 0.0 < a.summary["final_accuracy"] <= 1.0


def test_finished_runs_are_reused_and_files_are_complete(tmp_path):
    config = RunConfig(**TINY)
    first = run(config, root=tmp_path)
    folder = result_folder(config, root=tmp_path)
    stamp = os.stat(folder / "result.json").st_mtime_ns
    again = run(config, root=tmp_path)
    assert os.stat(folder / "result.json").st_mtime_ns == stamp
    assert _numbers(again) == _numbers(first)
    assert again.ledger.rows() == first.ledger.rows()
    assert sorted(p.name for p in folder.iterdir()) == ["ledger.npz", "result.json"]  # no temp files


def test_interrupted_sweep_resumes(tmp_path, monkeypatch):
    sweep = [RunConfig(**TINY, seed=s) for s in range(3)]
    run(sweep[0], root=tmp_path)
    # an interruption during the second run leaves no result.json for it
    import thinwire.experiment.runner as runner
    calls = []
    real = runner._train

    def counting(config, *args, **kwargs):
        calls.append(config.seed)
        return real(config, *args, **kwargs)

    monkeypatch.setattr(runner, "_train", counting)
    for config in sweep:
        run(config, root=tmp_path)
    assert calls == [1, 2]
    assert all(cached(c, root=tmp_path) is not None for c in sweep)


def test_bytes_come_from_the_ledger(tmp_path):
    config = RunConfig(**TINY, push_codec="quantize(bits=8)")
    result = run(config, root=tmp_path)
    total = result.ledger.total_bytes("push")
    assert total == sum(result.metrics["push_bytes"]) == result.summary["push_bytes"]
    payload = result.ledger.total_bytes("push", payload=True)
    assert payload == result.summary["push_payload"] == sum(result.metrics["push_payload"])
    assert result.summary["bytes"] == result.summary["payload_bytes"] + result.summary["framing_bytes"]
    messages = result.summary["push_messages"] + result.summary["pull_messages"]
    assert result.summary["framing_bytes"] <= 32 * messages  # a compact binary header per message
    fp32 = run(RunConfig(**TINY), root=tmp_path)
    # 4 bytes a value against 1, plus the 8 bytes of (lo, hi) in each quantized message
    assert fp32.summary["push_payload"] == 4 * (result.summary["push_payload"] - 8 * result.summary["push_messages"])


# make test-long; make test runs four workers on three ranks on gloo in test_transport_invariance.py;
# this adds four ranks
@pytest.mark.long
def test_in_process_and_gloo_four_processes_agree(tmp_path):
    config = RunConfig(**TINY, workers=4, push_codec="ef(topk(ratio=0.1))")
    local = run(config, root=tmp_path)
    distributed = launch(config, nprocs=4, backend="gloo", root=tmp_path)
    assert distributed.backend == "gloo"
    assert distributed.summary["final_loss"] == pytest.approx(local.summary["final_loss"], abs=1e-5)
    assert distributed.ledger.rows() == local.ledger.rows()
    for a, b in zip(local.metrics["loss"], distributed.metrics["loss"]):
        assert a == pytest.approx(b, abs=1e-5)


def test_bad_config_fails_before_training():
    with pytest.raises(ValueError, match="^workers=0"):
        RunConfig(workers=0)


def test_interrupted_run_resumes_from_its_checkpoint(tmp_path, monkeypatch, interrupt_at):
    config = RunConfig(**TINY, push_codec="ef(topk(ratio=0.05))", optimizer="sgd", momentum=0.9)
    whole = run(config, root=tmp_path / "whole")
    import thinwire.experiment.runner as runner
    resume = interrupt_at(8)
    with pytest.raises(KeyboardInterrupt):
        run(config, root=tmp_path / "cut", checkpoint_every=3)
    folder = result_folder(config, root=tmp_path / "cut")
    assert (folder / "checkpoint.pt").exists() and not (folder / "result.json").exists()
    resume()
    calls = []
    real_step = runner.ALGORITHMS["plump_dp"].step
    monkeypatch.setattr(runner.ALGORITHMS["plump_dp"], "step",
                        lambda self, step, *a: calls.append(step) or real_step(self, step, *a))
    resumed = run(config, root=tmp_path / "cut", checkpoint_every=3)
    assert calls == list(range(6, config.steps))  # continued after the step-6 checkpoint
    assert _numbers(resumed) == _numbers(whole)
    assert resumed.ledger.rows() == whole.ledger.rows()
    assert not (folder / "checkpoint.pt").exists()
