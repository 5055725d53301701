"""The transport invariant, over every algorithm: one process and gloo ranks give identical
ledgers and evaluations, and losses equal up to the order in which the reported mean adds
the ranks' parts.

Four workers on three ranks, so rank 0 holds two of them: what one process computes for K
simulated workers must be what a rank computes for its own. Each algorithm runs with each
kind of codec it takes: dense, sparse (top-k, kept keys), quantized (fixed or chosen bits),
dropping; the parameter servers synchronous and asynchronous, pulling parameters or deltas
with AdaGrad (whose first updates are near ties that top-k and quantizers choose among).
``make test`` runs a share with every algorithm (``EVERYDAY``), ``make test-long`` the rest.

Both sides run their products on ``THREADS`` threads, as a rank and a process do on this
machine by default (torchrun leaves MKL's count alone): MKL rounds a product differently
with another thread count (7.5e-9 in a weight gradient of this MLP, 1 against 2 threads),
and a batch of K products differently from K products alone, which a lossy codec turns into
other messages. One thread each would hide the second: a batch of one-thread products is
the same bits as each product alone.
"""

from __future__ import annotations

import pytest
import torch

from same_run import assert_same_run
from transport_matrix import run_all_on_gloo
from thinwire.experiment import RunConfig, cached, run
from thinwire.experiment.launch import free_port
from thinwire.specs import pairs_tried_later

COMMON = dict(model="mlp(hidden=(32,))", workers=4, batch_size=16, steps=30, train_samples=1024, eval_every=15,
              eval_samples=200)
ADAGRAD_DELTA = dict(optimizer="adagrad", lr=0.005, pull_mode="delta")
SPARSE = dict(push_codec="ef(topk(ratio=0.1))", pull_codec="topk(ratio=0.1)")
QUANTIZED = dict(push_codec="quantize(bits=8)", pull_codec="quantize(bits=8)")
DROPPING = dict(push_codec="graddrop(ratio=0.9)", pull_codec="graddrop(ratio=0.9, residual=False)")
THREADS = 2
COLQUANT = "sized(colquant(bits=0), min_numel=1000, ndim=2)"

MATRIX = {
    "allreduce-dense": dict(algorithm="allreduce"),
    "allreduce-fp16": dict(algorithm="allreduce", push_codec="fp16"),
    "allreduce-powersgd": dict(algorithm="allreduce", powersgd_rank=2),
    "eventgrad-dense": dict(algorithm="eventgrad", sampling="sequential"),
    "eventgrad-topk": dict(algorithm="eventgrad", sampling="sequential", push_codec="topk(ratio=0.1)",
                           push_policy="event(horizon=0.0, forced=0, topk=0.1)"),
    "mqgrad-sarsa": dict(algorithm="mqgrad", push_codec=COLQUANT, pull_codec=COLQUANT, decay_over=1000,
                         bits_policy="sarsa_bits(epsilon=0.5)"),
    "plump_dp-dense": dict(algorithm="plump_dp"),
    "plump_dp-sparse": dict(algorithm="plump_dp", push_codec="ef(topk(ratio=0.1))"),
    "plump_dp-quantized": dict(algorithm="plump_dp", **QUANTIZED),
    "plump_dp-dropping-delta": dict(algorithm="plump_dp", **ADAGRAD_DELTA, **DROPPING),
    "sharded_ps-dense-delta": dict(algorithm="sharded_ps", **ADAGRAD_DELTA),
    "sharded_ps-sparse-delta": dict(algorithm="sharded_ps", **ADAGRAD_DELTA, **SPARSE),
    "sharded_ps-quantized-delta": dict(algorithm="sharded_ps", **ADAGRAD_DELTA, **QUANTIZED),
    "sharded_ps-dropping-delta": dict(algorithm="sharded_ps", **ADAGRAD_DELTA, **DROPPING),
    "sharded_ps-quantized-params": dict(algorithm="sharded_ps", optimizer="adagrad", lr=0.005, **QUANTIZED),
    "sharded_ps-async-sparse": dict(algorithm="sharded_ps", schedule="async", **ADAGRAD_DELTA, **SPARSE),
    "sharded_ps-async-quantized": dict(algorithm="sharded_ps", schedule="async", **ADAGRAD_DELTA, **QUANTIZED),
    "sharded_ps-async-dropping": dict(algorithm="sharded_ps", schedule="async", warmup_steps=2, **ADAGRAD_DELTA,
                                      **DROPPING),
    "slim_dp-keycache": dict(algorithm="slim_dp", refresh=4),
    "weight_averaging-quantized": dict(algorithm="weight_averaging", **QUANTIZED),
    "weight_averaging-entropy": dict(algorithm="weight_averaging", model="mlp(hidden=(16, 8), activation='tanh')",
                                     loss="mse", push_codec="binquant(bits=0, coder='huffman')",
                                     pull_codec="binquant(bits=0, coder='huffman')",
                                     push_policy="entropy_bits(c=3, m=4)", pull_policy="entropy_bits(c=3, m=4)"),
}
# Made at collection, in every worker: the codec-policy pairs are tried when a run makes its
# config again (the ranks from the config's dict), so collecting compiles no kernel
with pairs_tried_later():
    CONFIGS = {name: RunConfig(**{**COMMON, **values}) for name, values in MATRIX.items()}
# make test's share of the matrix: every algorithm at least once, the parameter server pulling
# deltas with a dropping codec and asynchronously; the rest in make test-long
EVERYDAY = ("allreduce-powersgd", "eventgrad-topk", "mqgrad-sarsa", "plump_dp-quantized", "sharded_ps-dropping-delta",
            "sharded_ps-async-sparse", "slim_dp-keycache", "weight_averaging-quantized", "weight_averaging-entropy")


def test_the_matrix_covers_every_algorithm():
    from thinwire.algorithms import ALGORITHMS
    builtin = {name for name, cls in ALGORITHMS.items() if cls.__module__.startswith("thinwire.")}
    assert builtin <= {c.algorithm for c in CONFIGS.values()}


def _same_run(local, distributed) -> str | None:
    try:
        assert_same_run(local, distributed)
    except AssertionError as error:
        return str(error).splitlines()[0] if str(error) else "ledger or accuracies differ"
    return None


def test_the_everyday_share_covers_every_algorithm():
    assert {CONFIGS[name].algorithm for name in EVERYDAY} == {c.algorithm for c in CONFIGS.values()}


@pytest.mark.parametrize("share", ["everyday", pytest.param("rest", marks=pytest.mark.long)])
def test_one_process_and_gloo_ranks_give_the_same_run(tmp_path, share):
    """One test per share, so that the ranks start once (a fixture would start them on each xdist worker)."""
    configs = {name: c for name, c in CONFIGS.items() if (name in EVERYDAY) == (share == "everyday")}
    run_all_on_gloo(list(configs.values()), world=3, port=free_port(), root=str(tmp_path / "gloo"), threads=THREADS)
    threads = torch.get_num_threads()
    torch.set_num_threads(THREADS)
    try:
        differ = {}
        for name, config in configs.items():
            distributed = cached(config, "gloo", tmp_path / "gloo")
            assert distributed is not None, f"{name}: the gloo ranks wrote no result"
            if (why := _same_run(run(config, root=tmp_path / "local"), distributed)) is not None:
                differ[name] = why
    finally:
        torch.set_num_threads(threads)
    assert not differ, f"one process and gloo differ: {differ}"


def test_rank_threads_gives_the_block_a_launched_ranks_thread_count(monkeypatch):
    """An in-process reference computes at the ranks' thread count (``launch`` starts each
    rank with ``$OMP_NUM_THREADS`` or one thread), and the caller's count comes back."""
    from thinwire.experiment.launch import rank_threads, torchrun_env
    before = torch.get_num_threads()
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    with rank_threads():
        assert torch.get_num_threads() == 1 == int(torchrun_env()["OMP_NUM_THREADS"])
    assert torch.get_num_threads() == before
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    with rank_threads():
        assert torch.get_num_threads() == 2 == int(torchrun_env()["OMP_NUM_THREADS"])
    assert torch.get_num_threads() == before
