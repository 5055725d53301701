"""The CLI as a careless user meets it: one-line errors (exit 2) for mistakes, a config dump
that --config reads back, --set limited to the config's own section, the runs catalog,
re-timing a cached run; and medians with provenance in every new result."""

import json
import subprocess
import sys

import pytest

from thinwire.cli import main
from thinwire.experiment import RunConfig, run
from thinwire.experiment.timing import median_after_warmup, warmup_steps

TINY = ["--set", "model=mlp(hidden=(16,))", "--set", "steps=6", "--set", "train_samples=512", "--set", "eval_samples=200",
        "--set", "eval_every=3", "--set", "batch_size=16"]


@pytest.mark.parametrize("argv, message", [
    (["config", "--set", "foo.lr=0.5"], "'foo' is not a section"),
    (["config", "--set", "sharded_ps.lr=0.5"], "its section is 'plump_dp', not 'sharded_ps'"),
    (["config", "--set", "plump_dp.nolr=0.5"], "plump_dp has no parameter 'nolr'"),
    (["config", "--set", "hidden=[64]"], "options of the model spec"),
    (["config", "--set", "model=mlp(hidden=(0,))"], "hidden must be a tuple of positive ints"),
    (["config", "--set", "step=20"], "unknown parameter(s) ['step'] for algorithm='plump_dp' (did you mean 'steps'?)"),
    (["config", "--set", "push_codec='topk(ration=0.01)'"],
     "codec spec 'topk(ration=0.01)': topk takes no keyword 'ration' (did you mean 'ratio'?); its keywords: ratio=0.01"),
    (["config", "--set", "push_codec='ef(topk(ratio=0.1), decay=0.9)'"], "ef takes no keyword 'decay'; its keywords: inner"),
    (["config", "--set", "push_codec='topkk'"], "unknown codec 'topkk' (did you mean 'topk'?)"),
    (["config", "--set", "algorithm=eventgrad", "--set", "push_policy='event(horizn=1)'"],
     "event takes no keyword 'horizn' (did you mean 'horizon'?); its keywords: horizon=1.0, history=2,"),
    (["config", "--set", "model=mlp(hiden=(3,))"], "unknown option(s) ['hiden'] (did you mean 'hidden'?)"),
    (["run", "--set", "dataset=cifar10", "--results", "{tmp}"], "cifar10 not found"),
    (["scraps", "{tmp}/nonexist.ipynb"], "cannot read it"),
    (["scraps", "{tmp}/latin1.ipynb"], "latin1.ipynb': not a Jupyter notebook (not UTF-8 text: byte 12)"),
    (["scraps", "{tmp}/unexecuted.ipynb"], "unexecuted.ipynb': the notebook has not been executed"),
    (["run", "--config", "{tmp}/nonexist.json"], "cannot read it"),
    (["runs", "--results", "{tmp}", "--remove", "zz"], "at least 4 hex digits"),
    (["tidy", "{tmp}/nonexist.ipynb"], "no such executed notebook"),
])
def test_user_errors_are_one_line_and_exit_2(tmp_path, capsys, argv, message):
    (tmp_path / "latin1.ipynb").write_bytes('{"cells": ["\u00e9t\u00e9"]}'.encode("latin-1"))
    (tmp_path / "unexecuted.ipynb").write_text(json.dumps(
        {"cells": [{"cell_type": "code", "execution_count": None, "outputs": [], "source": "x = 1"}]}))
    assert main([a.replace("{tmp}", str(tmp_path)) for a in argv]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and err.count("\n") == 1


def test_a_section_set_after_choosing_its_algorithm_is_applied(capsys):
    assert main(["config", "--set", "algorithm=sharded_ps", "--set", "sharded_ps.lr=0.5"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["algorithm"] == "sharded_ps" and doc["sharded_ps"]["lr"] == 0.5


def test_config_dump_reads_back_and_runs(tmp_path, capsys):
    out = tmp_path / "c.json"
    assert main(["config", "--dump", "--output", str(out), *TINY, "--set", "push_codec='topk(ratio=0.1)'"]) == 0
    config = RunConfig.from_dict(json.loads(out.read_text()))
    assert config.steps == 6 and config.push_codec == "topk(ratio=0.1)"
    assert main(["run", "--config", str(out), "--results", str(tmp_path / "r")]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["key"] == config.key() and summary["compute_seconds_per_step"] > 0
    assert main(["runs", "--results", str(tmp_path / "r"), "--csv", str(tmp_path / "runs.csv")]) == 0
    import pandas as pd
    table = pd.read_csv(tmp_path / "runs.csv")
    assert list(table["key"]) == [config.key()] and table["host_cpu"].notna().all()
    assert main(["runs", "--results", str(tmp_path / "r"), "--remove", config.key()[:6]]) == 0
    assert not list((tmp_path / "r").iterdir())


def test_run_says_on_stderr_what_ran_and_whether_it_trained_or_reused_the_saved_result(tmp_path, capsys):
    argv = ["run", *TINY, "--set", "steps=4", "--results", str(tmp_path)]
    said = []
    for _ in range(2):
        assert main(argv) == 0
        out, err = capsys.readouterr()
        said.append((json.loads(out), err.strip().splitlines()))
    (first, (ran, where)), (again, (reran, where_again)) = said
    folder = tmp_path / f"{first['key']}-inprocess"
    assert first == again and folder.is_dir()
    assert ran.startswith("thinwire: trained plump_dp, mlp(hidden=(16,)), push fp32, 4 workers, 4 steps (inprocess): ")
    assert f"accuracy {first['final_accuracy']:.4f}" in ran and "per step" in ran
    assert reran.startswith("thinwire: reused plump_dp") and reran.split(": ", 2)[2] == ran.split(": ", 2)[2]
    assert where == f"thinwire: result in {folder}" and where_again.startswith(where + " (trained earlier")


def test_a_run_that_fails_before_training_leaves_no_results_folder(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("THINWIRE_DATA", str(tmp_path / "no-data"))
    assert main(["run", *TINY, "--results", str(tmp_path / "r")]) == 2
    assert "not found" in capsys.readouterr().err
    assert list((tmp_path / "r").iterdir()) == []


def test_a_closed_pipe_is_not_a_traceback():
    code = "from thinwire.cli import main; import sys; sys.exit(main(['presets'] * 1))"
    proc = subprocess.run(f"{sys.executable} -c \"{code}\" | head -c 10 >/dev/null; "
                          f"{sys.executable} -m thinwire config | head -1", shell=True,
                          capture_output=True, text=True)
    assert "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr


def test_medians_after_warmup_ignore_a_slow_first_step():
    assert warmup_steps(1) == 0 and warmup_steps(10) == 1 and warmup_steps(1000) == 20
    assert median_after_warmup([9.0, 1.0, 1.2, 0.8, 1.0, 1.1, 0.9, 1.0, 1.0, 1.0]) == 1.0


def test_new_results_carry_provenance_and_retime_keeps_bytes(tmp_path):
    config = RunConfig(model="mlp(hidden=(16,))", steps=6, train_samples=512, eval_samples=200, eval_every=3, batch_size=16,
                       push_codec="quantize(bits=8)")
    first = run(config, root=tmp_path)
    for key in ("git_commit", "host_cpu", "torch", "numba", "torch_threads", "date", "load_average", "thinwire"):
        assert key in first.provenance
    assert first.summary["codec_seconds"] == pytest.approx(6 * first.summary["codec_seconds_per_step"])
    again = run(config, root=tmp_path, retime=True)
    assert again.ledger.rows() == first.ledger.rows() and again.metrics["loss"] == first.metrics["loss"]
    assert again.metrics["compute_seconds"] != first.metrics["compute_seconds"]
    assert run(config, root=tmp_path).provenance["date"] == again.provenance["date"]


def test_the_provenance_table_groups_runs_by_machine_and_code(tmp_path):
    from thinwire.experiment.timing import provenance_table
    config = RunConfig(model="mlp(hidden=(16,))", steps=4, train_samples=512, eval_samples=200, eval_every=2, batch_size=16)
    a, b = run(config, root=tmp_path), run(config.replace(seed=1), root=tmp_path)
    table = provenance_table({"x": [a, None], "y": {"z": b}})
    assert len(table) == 1 and table["runs"].iloc[0] == 2 and table["CPU"].iloc[0] == a.provenance["host_cpu"]
    assert table["first"].iloc[0] <= table["last"].iloc[0]
