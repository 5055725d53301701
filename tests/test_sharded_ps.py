"""Parameter sharding (Aji & Heafield 2017, Sec. 3): the flat layout, equivalence with
Plump-DP when nothing is dropped, the pull-codec rule, and the two transports agreeing."""

import pytest
import torch

from thinwire.algorithms.flat_layout import FlatLayout
from thinwire.experiment import RunConfig, run
from thinwire.experiment.launch import launch
from thinwire.models import Replicas, build_model

TINY = dict(hidden=(48, 40), steps=12, train_samples=1024, eval_every=6, eval_samples=500, batch_size=16,
            workers=4, optimizer="adagrad", lr=0.005, pull_mode="delta")
DROP = dict(push_codec="graddrop(ratio=0.9)", pull_codec="graddrop(ratio=0.9, residual=False)")
TIMINGS = {"compute_seconds", "wall_seconds"}


def _numbers(result):
    return {k: v for k, v in result.metrics.items() if k not in TIMINGS}


def test_flat_layout_round_trips_and_cuts_at_rows():
    model = build_model("mlp", (1, 28, 28), 10, 0, hidden=(48, 40))
    replicas = Replicas(model, 2)
    layout = FlatLayout({n: p[0] for n, p in replicas.params.items()})
    flat = layout.flatten({n: p[1] for n, p in replicas.params.items()})
    for name, view in layout.views(flat).items():
        assert torch.equal(view, replicas.params[name][1])
    bounds = layout.shard_bounds(4)
    assert bounds[0][0] == 0 and bounds[-1][1] == layout.numel
    assert all(a[1] == b[0] for a, b in zip(bounds, bounds[1:]))
    for lo, hi in bounds:
        segments = layout.segments(lo, hi)
        assert sum(n for _, n, _ in segments) == hi - lo
        assert all(n % columns == 0 for _, n, columns in segments)  # whole rows only
    assert max(hi - lo for lo, hi in bounds) < 1.2 * layout.numel / 4


def test_without_dropping_sharding_is_plump_dp(tmp_path):
    plump = run(RunConfig(algorithm="plump_dp", **TINY), root=tmp_path)
    sharded = run(RunConfig(algorithm="sharded_ps", **TINY), root=tmp_path)
    dropped_nothing = run(RunConfig(algorithm="sharded_ps", push_codec="graddrop(ratio=0.0)",
                                    pull_codec="graddrop(ratio=0.0, residual=False)", **TINY), root=tmp_path)
    for result in (sharded, dropped_nothing):
        assert result.metrics["loss"] == plump.metrics["loss"]
        assert result.metrics["test_accuracy"] == plump.metrics["test_accuracy"]
    assert dropped_nothing.summary["push_density"] == 1.0
    params_mode = run(RunConfig(algorithm="plump_dp", **{**TINY, "pull_mode": "params"}), root=tmp_path)
    assert sharded.summary["final_loss"] == pytest.approx(params_mode.summary["final_loss"], abs=1e-5)


def test_dropping_cuts_bytes_and_hits_the_density(tmp_path):
    dense = run(RunConfig(algorithm="sharded_ps", **TINY), root=tmp_path)
    sparse = run(RunConfig(algorithm="sharded_ps", **TINY, **DROP), root=tmp_path)
    assert 0.085 < sparse.summary["push_density"] < 0.115
    assert dense.summary["bytes_per_step"] / sparse.summary["bytes_per_step"] > 5
    assert sparse.summary["final_accuracy"] > 0.5


def test_pull_codec_with_its_own_residual_is_refused():
    with pytest.raises(ValueError, match="keeps a residual of its own"):
        run(RunConfig(algorithm="sharded_ps", **{**TINY, "pull_codec": "graddrop(ratio=0.9)"}))


def test_in_process_and_gloo_four_processes_agree(tmp_path):
    config = RunConfig(algorithm="sharded_ps", **TINY, **DROP)
    local = run(config, root=tmp_path)
    distributed = launch(config, nprocs=4, backend="gloo", root=tmp_path)
    assert distributed.summary["final_loss"] == pytest.approx(local.summary["final_loss"], abs=1e-5)
    assert distributed.ledger.rows() == local.ledger.rows()
    assert distributed.summary["push_density"] == local.summary["push_density"]
