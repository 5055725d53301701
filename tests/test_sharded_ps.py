"""Parameter sharding (Aji & Heafield 2017, Sec. 3): the flat layout, equivalence with
Plump-DP when nothing is dropped, the pull-codec rule, and the asynchronous schedule on both
transports (every algorithm's transport invariance: ``test_transport_invariance.py``)."""

import pytest
import torch

from thinwire.algorithms.flat_layout import FlatLayout
from thinwire.experiment import RunConfig, run
from thinwire.experiment.launch import launch
from thinwire.models import Replicas, build_model
from thinwire.experiment.timing import untimed

TINY = dict(model="mlp(hidden=(48, 40))", steps=12, train_samples=1024, eval_every=6, eval_samples=500, batch_size=16,
            workers=4, optimizer="adagrad", lr=0.005, pull_mode="delta")
DROP = dict(push_codec="graddrop(ratio=0.9)", pull_codec="graddrop(ratio=0.9, residual=False)")


def _numbers(result):
    return untimed(result.metrics)


def test_flat_layout_round_trips_and_cuts_at_rows():
    model = build_model("mlp(hidden=(48, 40))", (1, 28, 28), 10, 0)
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


@pytest.mark.parametrize("algorithm", ["sharded_ps", "plump_dp"])
@pytest.mark.parametrize("pull_codec", ["graddrop(ratio=0.9)", "ef(topk(ratio=0.1))"])
def test_pull_codec_with_its_own_residual_is_refused_with_the_config(algorithm, pull_codec):
    """Delta pulls already carry what a pull left out: a pull codec with a residual of its own
    is refused when the config is made, before any data loads."""
    with pytest.raises(ValueError, match=r"pull_codec=.* is not allowed with pull_mode='delta': it keeps a residual"):
        RunConfig.from_dict({**TINY, "algorithm": algorithm, "pull_codec": pull_codec})
    RunConfig.from_dict({**TINY, "algorithm": algorithm, "pull_codec": pull_codec, "pull_mode": "params"})


def test_ranks_import_a_papers_observer_only_for_a_run_that_names_it():
    """Importing the papers compiles numba's parallel kernels (their recipes validate qsgd and
    binquant), which resets OpenMP's thread count in that process: a sharded_ps rank that
    did so computed with two threads and its loss left the in-process run's by 1e-4."""
    from thinwire.experiment.launch import torchrun_env
    from thinwire.papers import oland_raj  # noqa: F401  (registers its observer here)
    plain = RunConfig(algorithm="sharded_ps", **TINY, **DROP)
    observed = RunConfig(algorithm="weight_averaging", model="mlp(hidden=(8,))", observe="oland_raj_probes")
    assert "thinwire.papers" not in torchrun_env(plain).get("THINWIRE_IMPORT", "")
    assert "thinwire.papers.oland_raj.probes" in torchrun_env(observed)["THINWIRE_IMPORT"].split(",")


ASYNC = dict(schedule="async", warmup_steps=0)


def _one_step_params(schedule: str, order_check=None):
    """Two clients, lossless codecs, plain SGD: every client's model after one step."""
    from thinwire.algorithms import ShardedPS, ShardedPSSection
    from thinwire.comm import InProcessTransport
    model = build_model("mlp(hidden=(16,))", (1, 28, 28), 10, 0)
    section = ShardedPSSection(optimizer="sgd", lr=0.5, pull_mode="delta", schedule=schedule)
    ps = ShardedPS(model, InProcessTransport(), 2, section, seed=3)
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(2, 8, 1, 28, 28, generator=g), torch.randint(0, 10, (2, 8), generator=g)
    _, _, grads = ps.replicas.loss_and_grads(x, y)
    grads = [ps.layout.flatten({n: gr[k] for n, gr in grads.items()}).clone() for k in range(2)]
    w0 = ps.layout.flatten({n: p[0] for n, p in ps.replicas.params.items()}).clone()
    ps.step(0, x, y)
    after = [ps.layout.flatten({n: p[k] for n, p in ps.replicas.params.items()}) for k in range(2)]
    return ps, w0, grads, after


def test_async_applies_each_push_on_its_own_and_each_client_pulls_its_own_delta():
    """Marian's asynchronous SGD: the first client in the arrival order pulls the model with
    only its own update, the second with both (no averaging); synchronous SGD gives both
    clients w - lr * mean(g)."""
    ps, w0, g, after = _one_step_params("async")
    first, second = ps.arrival_order(0)
    assert torch.allclose(after[first], w0 - 0.5 * g[first], atol=1e-6)
    assert torch.allclose(after[second], w0 - 0.5 * (g[first] + g[second]), atol=1e-6)
    _, w0, g, after = _one_step_params("sync")
    for k in range(2):
        assert torch.allclose(after[k], w0 - 0.5 * (g[0] + g[1]) / 2, atol=1e-6)


def test_async_arrival_order_is_seeded_per_step():
    from thinwire.algorithms import ShardedPS, ShardedPSSection
    from thinwire.comm import InProcessTransport
    model = build_model("mlp(hidden=(16,))", (1, 28, 28), 10, 0)
    make = lambda seed: ShardedPS(model, InProcessTransport(), 6, ShardedPSSection(schedule="async"), seed=seed)
    a, b, c = make(0), make(0), make(1)
    orders = [a.arrival_order(s) for s in range(20)]
    assert orders == [b.arrival_order(s) for s in range(20)]
    assert orders != [c.arrival_order(s) for s in range(20)]
    assert len({tuple(o) for o in orders}) > 10 and all(sorted(o) == list(range(6)) for o in orders)


def test_dense_warmup_then_dropping(tmp_path):
    """The first warmup_steps send every value as float32 and leave the residuals empty;
    dropping starts after them (Marian: 100 dense pushes and fetches per device)."""
    config = RunConfig(algorithm="sharded_ps", **{**TINY, **DROP, **ASYNC, "warmup_steps": 4})
    result = run(config, root=tmp_path)
    dense = run(RunConfig(algorithm="sharded_ps", **{**TINY, **ASYNC}), root=tmp_path)
    push = result.metrics["push_payload"]
    assert push[:4] == dense.metrics["push_payload"][:4]
    assert all(p < push[0] / 5 for p in push[4:])
    density = result.metrics["push_density"]
    assert density[:4] == [None] * 4  # float32 messages: no dropping ran
    assert all(0.085 < d < 0.115 for d in density[4:])


# make test-long; make test runs the asynchronous server on gloo in test_transport_invariance.py;
# this adds resuming
@pytest.mark.long
def test_async_in_process_and_gloo_agree_and_resume(tmp_path, interrupt_at):
    config = RunConfig(algorithm="sharded_ps", **{**TINY, **DROP, **ASYNC, "warmup_steps": 2})
    local = run(config, root=tmp_path)
    again = run(config, root=tmp_path / "again")
    assert _numbers(local) == _numbers(again)
    distributed = launch(config, nprocs=4, backend="gloo", root=tmp_path)
    assert distributed.ledger.rows() == local.ledger.rows()
    for a, b in zip(local.metrics["loss"], distributed.metrics["loss"]):
        assert a == pytest.approx(b, abs=1e-5)
    resume = interrupt_at(7)
    with pytest.raises(KeyboardInterrupt):
        run(config, root=tmp_path / "cut", checkpoint_every=3)
    resume()
    assert _numbers(run(config, root=tmp_path / "cut", checkpoint_every=3)) == _numbers(local)
