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


@pytest.mark.long  # make test-long: a wheel built and installed, then two runs of the installed command
def test_pip_install_into_a_fresh_venv_then_fetch_the_data_then_run(tmp_path):
    """``pip install .`` into a new venv, ``thinwire data fetch mnist`` (from a server on
    loopback serving data/), ``thinwire run --set steps=5`` from an empty folder; a run whose
    data is missing fails naming the fetch command and leaves no results folder. The venv reads
    torch and the other dependencies from this environment (a path line added after the
    install), so the install puts only thinwire there."""
    from loopback_http import serving
    venv, wheels, empty = tmp_path / "venv", tmp_path / "wheels", tmp_path / "empty"
    empty.mkdir()
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(wheels),
                    str(ROOT)], check=True, capture_output=True)
    subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q", "--no-deps",
                    *map(str, wheels.glob("thinwire-*.whl"))], check=True, capture_output=True)
    site = next((venv / "lib").glob("python3*/site-packages"))
    ours = next(p for p in sys.path if p.endswith("site-packages") and Path(p, "torch").is_dir())
    (site / "dependencies.pth").write_text(ours + "\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("THINWIRE_") or k == "THINWIRE_CACHE"}
    env.pop("PYTHONPATH", None)
    thinwire = str(venv / "bin" / "thinwire")
    where = subprocess.run([str(venv / "bin" / "python"), "-c", "import thinwire; print(thinwire.__file__)"], env=env,
                           cwd=empty, capture_output=True, text=True, check=True)
    assert where.stdout.startswith(str(site)), where.stdout
    with serving(ROOT / "data" / "mnist") as (url, _):
        fetched = subprocess.run([thinwire, "data", "fetch", "mnist", "--from", url], cwd=empty, env=env,
                                 capture_output=True, text=True)
    assert fetched.returncode == 0, fetched.stderr
    assert len(list((empty / "data" / "mnist").glob("*.gz"))) == 4
    done = subprocess.run([thinwire, "run", "--set", "steps=5"], cwd=empty, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    key = json.loads(done.stdout)["key"]
    assert "trained" in done.stderr and f"results/{key}-inprocess" in done.stderr
    assert [p.name for p in (empty / "results").iterdir()] == [f"{key}-inprocess"]
    failed = subprocess.run([thinwire, "run", "--set", "steps=5", "--set", "dataset='fashion_mnist'"], cwd=empty,
                            env=env, capture_output=True, text=True)
    assert failed.returncode == 2 and "thinwire data fetch fashion_mnist" in failed.stderr, failed.stderr
    assert len(failed.stderr.strip().splitlines()) == 1
    assert [p.name for p in (empty / "results").iterdir()] == [f"{key}-inprocess"]
