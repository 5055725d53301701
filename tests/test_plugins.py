"""Plug-ins: a user's codec reaches run(), the CLI (--import, $THINWIRE_IMPORT) and
torchrun ranks started by launch(); a network of one's own can be given in a config."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from thinwire.experiment import RunConfig, run

EXAMPLE = Path(__file__).parent / "plugin_example"
TINY = dict(model="mlp(hidden=(16,))", steps=4, train_samples=512, eval_every=2, eval_samples=200, batch_size=16)


@pytest.fixture
def sign_codec(monkeypatch):
    monkeypatch.syspath_prepend(str(EXAMPLE))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(EXAMPLE), os.environ.get("PYTHONPATH", "")]))
    import sign_codec  # noqa: F401  (registers "sign")
    from thinwire.codecs import CODECS, make_codec
    yield make_codec("sign")
    CODECS.pop("sign", None)  # later tests in this process must not forward the plug-in to their ranks
    sys.modules.pop("sign_codec", None)


def test_the_example_codec_round_trips_signs(sign_codec):
    import torch
    x = torch.tensor([0.5, -2.0, 1.5, -0.1, 0.0, 3.0, -1.0, 2.0, -4.0])
    y = sign_codec.decode(sign_codec.encode(x))
    assert torch.equal(torch.sign(y), torch.where(x >= 0, 1.0, -1.0)) and y.abs().max() == x.abs().mean()


@pytest.mark.long  # make test-long: torchrun ranks and a CLI process; the registration itself is tested above
def test_a_registered_codec_reaches_the_cli_and_torchrun_ranks(sign_codec, tmp_path):
    from thinwire.experiment.launch import launch
    config = RunConfig(**TINY, workers=2, push_codec="sign")
    local = run(config, root=tmp_path)
    distributed = launch(config, nprocs=2, backend="gloo", root=tmp_path)  # ranks import sign_codec
    assert distributed.ledger.rows() == local.ledger.rows()
    env = dict(os.environ)
    env.pop("THINWIRE_IMPORT", None)
    cmd = [sys.executable, "-m", "thinwire", "--import", "sign_codec", "run", "--set", "push_codec='sign'",
           "--set", "workers=2", "--results", str(tmp_path / "cli")] + [
        a for k, v in TINY.items() for a in ("--set", f"{k}={list(v) if isinstance(v, tuple) else v}")]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["payload_bytes"] == local.summary["payload_bytes"]
    missing = subprocess.run(cmd[:3] + cmd[5:], env=env, capture_output=True, text=True)
    assert missing.returncode == 2 and "unknown codec 'sign'" in missing.stderr and "--import" in missing.stderr


def test_a_network_of_ones_own_in_a_config():
    config = RunConfig(network="link(latency_s=1e-4, bandwidth_bytes_per_s=1e9)")
    assert config.network == "link(bandwidth_bytes_per_s=1000000000.0, latency_s=0.0001, message_latency_s=0.0)"
    assert RunConfig.from_dict(json.loads(json.dumps(config.to_dict()))).key() == config.key()
    from thinwire.comm import network_preset
    model = network_preset(config.network)
    assert model.phase_seconds([(0, 1, 1000)]) == pytest.approx(1e-4 + 1e-6)
    for bad in ("link(bandwidth_bytes_per_s=0, latency_s=0)", "link(latency_s=1)", "fast", "link(speed=1)"):
        with pytest.raises(ValueError, match="network="):
            RunConfig(network=bad)


def test_the_readme_shows_the_tested_example():
    body = (EXAMPLE / "sign_codec.py").read_text().split('"""', 2)[2].strip()
    assert body in (Path(__file__).resolve().parents[1] / "README.md").read_text()
