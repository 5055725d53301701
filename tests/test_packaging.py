"""A non-editable install: found data through THINWIRE_DATA, results under the current
folder, the paper READMEs shipped as package data, and no compiled cache inside the package."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.long  # make test-long: an install of the package and a process on it, for what rarely changes
def test_an_installed_copy_runs_from_anywhere(tmp_path):
    site, elsewhere = tmp_path / "site", tmp_path / "elsewhere"
    elsewhere.mkdir()
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--target",
                    str(site), str(ROOT)], check=True, capture_output=True)
    assert (site / "thinwire" / "papers" / "slim_dp" / "README.md").exists()
    env = {**os.environ, "PYTHONPATH": str(site), "THINWIRE_DATA": str(ROOT / "data"),
           "THINWIRE_CACHE": str(tmp_path / "cache")}
    for name in ("THINWIRE_RESULTS", "THINWIRE_REPORTS"):
        env.pop(name, None)
    done = subprocess.run([sys.executable, "-m", "thinwire", "run", "--set", "model=mlp(hidden=(16,))", "--set", "steps=4",
                           "--set", "train_samples=512", "--set", "eval_samples=200", "--set", "batch_size=16",
                           "--set", "push_codec='fp32'"], cwd=elsewhere, env=env, capture_output=True, text=True)
    # fp32's message still compiles 13 kernels (bit packing's, the checksum's) into the fresh cache:
    # the run took 11 s with it, 71 s with quantize(bits=8)'s parallel kernels, compiled for
    # the unit tests anyway
    assert done.returncode == 0, done.stderr
    key = json.loads(done.stdout)["key"]
    assert (elsewhere / "results" / f"{key}-inprocess" / "result.json").exists()
    assert not list((site / "thinwire").rglob("*.nbi")) and list((tmp_path / "cache").rglob("*.nbi"))
    env.pop("THINWIRE_DATA")
    missing = subprocess.run([sys.executable, "-m", "thinwire", "run"], cwd=elsewhere, env=env, capture_output=True,
                             text=True)
    assert missing.returncode == 2 and "THINWIRE_DATA" in missing.stderr
