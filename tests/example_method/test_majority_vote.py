"""The example method (``majority_vote.py``) runs through the workbench as any built-in one
does, from its own folder: registered by being imported, trained by ``run``, its bytes in
the ledger, the same numbers on torch.distributed (gloo)."""

import os
import sys
from pathlib import Path

import pytest

from thinwire.experiment import RunConfig, run

HERE = Path(__file__).parent
TINY = dict(model="mlp(hidden=(32,))", steps=30, train_samples=2048, eval_every=10, eval_samples=500,
            batch_size=32, workers=3)


@pytest.fixture
def method(monkeypatch):
    monkeypatch.syspath_prepend(str(HERE))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]))
    import majority_vote
    yield majority_vote
    from thinwire.algorithms import ALGORITHMS
    from thinwire.codecs import CODECS
    CODECS.pop("signs", None)  # later tests in this process must not forward the module to their ranks
    ALGORITHMS.pop("majority_vote", None)
    sys.modules.pop("majority_vote", None)


def test_signs_travel_in_one_bit_each(method):
    import torch
    from thinwire.codecs import make_codec
    from thinwire.engine import wire
    codec = make_codec("signs")
    x = torch.tensor([0.5, -2.0, 0.0, -0.1, 3.0, -1.0, 2.0, -4.0, 7.0])
    message = codec.encode(x)
    payload, framing = wire.measure(message)
    assert payload == 2 and torch.equal(codec.decode(message), torch.where(x >= 0, 1.0, -1.0))


def test_majority_vote_trains_and_sends_one_bit_per_value(method, tmp_path):
    result = run(RunConfig(algorithm="majority_vote", lr=0.002, **TINY), root=tmp_path)
    assert result.summary["final_accuracy"] > 0.5, result.summary  # 10 classes: chance is 0.1
    sizes = (784 * 32, 32, 32 * 10, 10)  # the MLP's tensors: one message each, per worker and step
    push, pull = result.phase("push"), result.phase("pull")
    assert push.messages == pull.messages == TINY["steps"] * TINY["workers"] * len(sizes)
    assert push.payload == pull.payload == TINY["steps"] * TINY["workers"] * sum(-(-n // 8) for n in sizes)


def test_the_same_numbers_on_gloo(method, tmp_path):
    from thinwire.experiment.launch import launch
    config = RunConfig(algorithm="majority_vote", lr=0.002, **{**TINY, "steps": 6, "eval_every": 3})
    local = run(config, root=tmp_path / "local")
    distributed = launch(config, nprocs=2, backend="gloo", root=tmp_path / "gloo")
    assert distributed.metrics["loss"] == pytest.approx(local.metrics["loss"], rel=1e-5)
    assert distributed.phase("push").payload == local.phase("push").payload
