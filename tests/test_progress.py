"""Progress: one updating widget for every run of a notebook (one output under papermill),
and no bar from the CLI when its output is piped."""

import json
import subprocess
import sys


def test_three_runs_in_a_notebook_leave_one_progress_output(tmp_path):
    source = ["import os\nos.environ['THINWIRE_PROGRESS'] = '1'\nfrom thinwire.experiment import RunConfig, run\n",
              f"for s in range(3):\n    run(RunConfig(model='mlp(hidden=(16,))', steps=30, train_samples=512, eval_every=10, "
              f"eval_samples=200, batch_size=16, seed=s), root={str(tmp_path / 'r')!r})\n"]
    nb = {"cells": [{"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": source}],
          "metadata": {"kernelspec": {"name": "thinwire", "display_name": "thinwire (.venv)", "language": "python"}},
          "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "p.ipynb").write_text(json.dumps(nb))
    subprocess.run([sys.executable, "-m", "papermill", "-k", "thinwire", str(tmp_path / "p.ipynb"),
                    str(tmp_path / "o.ipynb")], check=True, capture_output=True)
    outputs = json.loads((tmp_path / "o.ipynb").read_text())["cells"][0]["outputs"]
    assert len(outputs) == 1 and "application/vnd.jupyter.widget-view+json" in outputs[0]["data"]
    assert len(list((tmp_path / "r").iterdir())) == 3


def test_the_cli_shows_no_bar_when_piped(tmp_path):
    done = subprocess.run([sys.executable, "-m", "thinwire", "run", "--set", "model=mlp(hidden=(16,))", "--set", "steps=30",
                           "--set", "train_samples=512", "--set", "eval_samples=200", "--set", "batch_size=16",
                           "--results", str(tmp_path)], capture_output=True, text=True,
                          env={**__import__("os").environ, "THINWIRE_PROGRESS": "1"})
    assert done.returncode == 0 and "it/s" not in done.stderr and "%|" not in done.stderr


def test_the_bar_shows_the_training_loss_and_the_last_test_accuracy(tmp_path, capsys):
    from thinwire.experiment import RunConfig, run
    config = RunConfig(model="mlp(hidden=(16,))", steps=6, eval_every=3, train_samples=256, eval_samples=100,
                       batch_size=16)
    result = run(config, root=tmp_path, progress=True)
    shown = [line for line in capsys.readouterr().err.replace("\r", "\n").splitlines() if line.strip()][-1]
    accuracy = [a for a in result.metrics["test_accuracy"] if a is not None][-1]
    assert "| 6/6 [" in shown and shown.endswith(f", loss {result.metrics['loss'][-1]:.4g}, accuracy {accuracy:.4f}]")
