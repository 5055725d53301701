"""Bad configs are rejected before any data loads, naming the parameter, the value and what
is allowed; abandoned temporary files are cleaned up."""

import os
import time

import pytest

from thinwire import cli
from thinwire.experiment import RunConfig, result_folder, run
from thinwire.experiment import runner

BAD = [
    ("workers", 0), ("workers", 2.5), ("workers", True), ("workers", 5000), ("batch_size", 0), ("batch_size", 20000),
    ("steps", 0), ("steps", -3), ("steps", "10"), ("train_samples", -1), ("train_samples", 70000),
    ("train_samples", 10), ("model", "mlp(hidden=64)"), ("model", "mlp(hidden=(0,))"),
    ("model", "mlp(hidden=(32, 'a'))"), ("model", "mlp(hidden=(True,))"), ("model", "mlp(activation='gelu')"),
    ("model", "mlp(layer_norm=1)"), ("model", "mlp(dropout=0.5)"), ("model", "cnn(kernel=30)"), ("model", "cnn(lrn=(5, 1))"),
    ("model", "cnn(channels=(4, 4, 4, 4, 4, 4))"), ("model", "mlp(hidden=[64]"), ("model", 3),
    ("loss", "hinge"), ("dataset", "imagenet"), ("model", "vgg"),
    ("network", "5g"), ("eval_every", 0), ("eval_samples", 20000), ("seed", -1), ("seed", 2**40), ("device", "tpu"),
    ("lr", 0.0), ("lr", True), ("lr", "0.1"), ("momentum", 1.0),
    ("weight_decay", -0.1), ("optimizer", "adam"), ("pull_mode", "diff"), ("adagrad_eps", 0),
    ("push_codec", "topk(ratio=3)"), ("push_codec", "topk(ratio=True)"), ("push_codec", "quantize(bits=True)"),
    ("push_codec", "chain(quantize(bits=8), topk(ratio=0.1))"), ("push_codec", "graddrop(ratio=0.9, ratio=0.5)"),
    ("push_codec", "graddrop(bits=True)"), ("push_codec", "graddrop(ratio=False, bits=1)"),
    ("pull_codec", "binquant(coder=['raw'])"), ("pull_codec", "nope"), ("push_codec", ""),
]


@pytest.mark.parametrize("field,value", BAD, ids=[f"{f}={v!r}" for f, v in BAD])
def test_bad_values_are_rejected_before_any_data_loads(field, value, monkeypatch, tmp_path):
    monkeypatch.setattr(runner, "load_dataset", lambda *a: pytest.fail("data loaded for a bad config"))
    with pytest.raises(ValueError) as info:
        run(RunConfig(**{field: value}), root=tmp_path)
    text = str(info.value)
    assert text.startswith(f"{field}={value!r}") and "allowed" in text, text


@pytest.mark.parametrize("field,value", [("lr_decay", 0.0), ("l1", 2.0), ("exchange_every", -1), ("momentum", 1.5),
                                         ("push_policy", "entropy_bits(c=11)"), ("pull_policy", "nope()")])
def test_bad_weight_averaging_values(field, value):
    with pytest.raises(ValueError, match=f"^{field}="):
        RunConfig(algorithm="weight_averaging", **{field: value})


@pytest.mark.parametrize("args,message", [
    (["--set", "workers=0"], "workers=0 is not allowed"),
    (["--set", "wokers=3"], "unknown parameter"),
    (["--set", "push_codec=topk(ratio=2)"], "push_codec="),
    (["--set", "steps"], "key=value"),
    (["--config", "/nonexistent/cfg.json"], "cannot read it"),
    (["--timeout", "0"], "--timeout 0 is not allowed"),
    (["--timeout", "nan"], "--timeout nan is not allowed"),
    (["--checkpoint-every", "-2"], "--checkpoint-every -2 is not allowed"),
])
def test_cli_rejects_bad_configs_with_a_message(args, message, tmp_path, capsys):
    assert cli.main(["run", *args, "--results", str(tmp_path)]) == 2
    assert message in capsys.readouterr().err


def test_cli_rejects_malformed_json(tmp_path, capsys):
    bad = tmp_path / "cfg.json"
    bad.write_text("{workers: 3")
    assert cli.main(["run", "--config", str(bad)]) == 2
    assert "not valid JSON" in capsys.readouterr().err
    bad.write_text("[1, 2]")
    assert cli.main(["run", "--config", str(bad)]) == 2
    assert "JSON object" in capsys.readouterr().err


def test_equal_configs_hash_alike():
    assert RunConfig(lr=1).key() == RunConfig(lr=1.0).key()
    assert RunConfig(push_codec="fp32").key() == RunConfig(push_codec="fp32()").key()
    assert RunConfig(push_codec="topk(ratio=0.01)").key() == RunConfig(push_codec="topk(ratio=1e-2)").key()


def test_abandoned_temporary_files_are_removed_when_the_folder_is_next_opened(tmp_path):
    config = RunConfig(model="mlp(hidden=(8,))", steps=2, train_samples=256, eval_every=2, eval_samples=100, batch_size=8)
    folder = result_folder(config, root=tmp_path)
    folder.mkdir(parents=True)
    old, fresh = folder / ".result.json.abc.tmp", folder / ".ledger.npz.def.tmp"
    old.write_text("half a file")
    fresh.write_text("being written")
    os.utime(old, (time.time() - 3600, time.time() - 3600))
    run(config, root=tmp_path)
    assert not old.exists() and fresh.exists()


def test_runs_without_traffic_or_ending_between_exchanges_still_save(tmp_path):
    common = dict(algorithm="weight_averaging", model="mlp(hidden=(8,))", train_samples=256, eval_samples=100, batch_size=8,
                  workers=2)
    short = run(RunConfig(**common, steps=5, eval_every=5), root=tmp_path)  # shorter than one epoch (16 steps)
    assert short.summary["bytes"] == 0 and short.summary["bytes_per_step"] == 0.0
    assert len(short.frame()) == 5
    longer = run(RunConfig(**common, steps=40, eval_every=8), root=tmp_path)  # last exchange at step 32
    assert len(longer.metrics["bytes"]) == 40 and len(longer.frame()) == 40
    per_exchange = longer.summary["bytes"] / 2  # exchanges after steps 16 and 32
    assert longer.summary["bytes_per_step"] == pytest.approx(2 * per_exchange / 40)
    assert (result_folder(longer.config, root=tmp_path) / "result.json").exists()


@pytest.mark.parametrize("settings, message", [
    (dict(push_codec="keycache"), r"push_codec='keycache' \(no policy\) is not allowed"),
    (dict(pull_codec="binquant(bits=0)"), r"\(no policy\) is not allowed: .* takes its bit width from a policy"),
    (dict(algorithm="sharded_ps", push_codec="keycache"), r"push_codec='keycache' \(no policy\)"),
    (dict(algorithm="weight_averaging", push_policy="entropy_bits(c=5, m=4)", push_codec="fp32"),
     "push_codec='fp32' with push_policy='entropy_bits.*takes no per-message decision"),
    (dict(algorithm="weight_averaging", pull_codec="ef(binquant(bits=0))"), r"pull_codec=.ef\(binquant"),
])
def test_codec_and_policy_pairs_that_cannot_work_fail_with_the_config(settings, message):
    with pytest.raises(ValueError, match=message):
        RunConfig(**settings)


@pytest.mark.parametrize("value", ["0", "many", "-2"])
def test_a_bad_kernel_team_setting_is_rejected_before_any_data_loads(value, monkeypatch, tmp_path):
    monkeypatch.setattr(runner, "load_dataset", lambda *a: pytest.fail("data loaded for a bad setting"))
    monkeypatch.setenv("THINWIRE_KERNEL_THREADS", value)
    with pytest.raises(ValueError, match=rf"THINWIRE_KERNEL_THREADS={value!r} is not allowed"):
        run(RunConfig(), root=tmp_path)
