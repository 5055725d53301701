"""Oland & Raj's synchronous weight averaging (Sec. 2): local SGD with decay and L1,
compressed exchanges that leave every worker with the same averaged weights."""

import pytest
import torch

from thinwire.algorithms import WeightAveraging
from thinwire.codecs import make_codec
from thinwire.comm import InProcessTransport
from thinwire.experiment import RunConfig, run
from thinwire.experiment.launch import launch
from thinwire.papers.oland_raj import OlandRajProbes, bits_per_parameter, oland_raj_runs
from thinwire.models import MLP, Replicas

from same_run import assert_same_run

TINY = dict(algorithm="weight_averaging", model="mlp(hidden=(16, 8), activation='tanh')", loss="mse", workers=3, batch_size=8,
            steps=12, train_samples=240, lr=0.1, lr_decay=0.5, l1=1e-3, eval_every=10, eval_samples=200,
            push_codec="binquant(bits=0, coder='huffman')", pull_codec="binquant(bits=0, coder='huffman')",
            push_policy="entropy_bits(c=3, m=4)", pull_policy="entropy_bits(c=3, m=4)")


def _batch(k, b=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(k, b, 1, 28, 28, generator=g), torch.randint(0, 10, (k, b), generator=g)


def test_exchange_leaves_every_worker_with_the_decoded_average():
    torch.manual_seed(0)
    model = MLP(784, (16, 8), activation="tanh")
    codec = make_codec("binquant(bits=0, coder='huffman')")
    algo = WeightAveraging(model, InProcessTransport(), 3, lr=0.1, push_codec=codec, pull_codec=codec,
                           exchange_every=2, push_policy="entropy_bits(c=3, m=4)",
                           pull_policy="entropy_bits(c=3, m=4)", observer=OlandRajProbes())
    x, y = _batch(3)
    algo.step(0, x, y)
    assert any(not torch.equal(p[0], p[1]) for p in algo.replicas.params.values())  # local steps differ
    metrics = algo.step(1, x, y)
    for name, p in algo.replicas.params.items():
        assert all(torch.equal(p[k], algo.global_params()[name]) for k in range(3))
    extra = metrics.extra
    assert {"bits/net.1.weight", "entropy/net.1.weight", "grad_rms/net.1.weight", "probe_payload/raw"} <= set(extra)
    assert 4 <= extra["bits/net.1.weight"] <= 7  # N = ceil(H + 3), H <= M = 4


def test_the_probes_observe_without_changing_the_run(tmp_path):
    """Oland & Raj's probes sit behind the observer hook: the same losses, ledger and
    weights with them as without, and their numbers in ``extra`` only."""
    plain = run(RunConfig(**TINY), root=tmp_path)
    probed = run(RunConfig(**TINY, observe="oland_raj_probes(entropy_grid=True)"), root=tmp_path)
    assert plain.metrics["loss"] == probed.metrics["loss"] and plain.ledger.rows() == probed.ledger.rows()
    assert plain.metrics["test_accuracy"] == probed.metrics["test_accuracy"]
    assert not any(k.startswith(("grad_rms/", "probe_payload/", "entropy_m")) for k in plain.metrics)
    keys = set(probed.metrics)
    assert {"grad_rms/net.1.weight", "probe_payload/raw", "probe_payload/ans", "entropy_m4_f0.03/net.1.weight"} <= keys
    with pytest.raises(ValueError, match=r"observe='nope' is not allowed: .*unknown observer 'nope'"):
        RunConfig(**TINY, observe="nope")
    with pytest.raises(ValueError, match=r"coders=\('zip',\) is not allowed"):
        RunConfig(**TINY, observe="oland_raj_probes(coders=('zip',))")


def test_local_step_is_sgd_with_decayed_rate_and_l1():
    torch.manual_seed(1)
    model = MLP(784, (16,), activation="tanh")
    algo = WeightAveraging(model, InProcessTransport(), 2, lr=0.2, lr_decay=0.5, l1=0.01, exchange_every=3)
    reference = Replicas(model, 2, loss="mse")
    x, y = _batch(2, seed=3)
    for step in range(5):
        _, _, grads = reference.loss_and_grads(x, y)
        lr = 0.2 * 0.5 ** (step // 3)
        for name, p in reference.params.items():
            l1 = 0.01 * p.sign() if p.dim() > 2 else 0
            p.sub_(lr * (grads[name] + l1))
        algo.step(step, x, y)
        if step == 2:  # the exchange (fp32 both ways) averages the references too
            for p in reference.params.values():
                p.copy_(p.mean(0, keepdim=True).expand_as(p))
        for name, p in reference.params.items():
            torch.testing.assert_close(algo.replicas.params[name], p, atol=1e-5, rtol=1e-4)


def test_config_rejects_averaging_options_elsewhere_and_bad_values():
    with pytest.raises(ValueError, match="lr_decay"):
        RunConfig(algorithm="plump_dp", lr_decay=0.9)
    with pytest.raises(ValueError, match="optimizer"):  # local steps are plain SGD: no optimizer to choose
        RunConfig(algorithm="weight_averaging", optimizer="adagrad")
    with pytest.raises(ValueError, match="coder='zip'"):
        RunConfig(algorithm="weight_averaging", push_codec="binquant(coder='zip')")
    with pytest.raises(ValueError, match="c=11"):
        RunConfig(algorithm="weight_averaging", push_codec="binquant(bits=0)", push_policy="entropy_bits(c=11)")
    with pytest.raises(ValueError, match="profile='huge'"):
        oland_raj_runs(profile="huge")


def test_bits_come_from_the_messages_and_probes_match_what_was_sent(tmp_path):
    result = run(RunConfig(**TINY, observe="oland_raj_probes"), root=tmp_path)
    rates = bits_per_parameter(result)
    assert len(rates["sent"]) == 12 // (240 // 3 // 8)
    torch.testing.assert_close(torch.tensor(rates["huffman"]), torch.tensor(rates["sent"]))
    assert (rates["raw"] > rates["sent"]).all() and (rates["sent"] < 8).all()


# make test-long; make test runs weight averaging on gloo in test_transport_invariance.py
@pytest.mark.long
def test_in_process_and_gloo_agree(tmp_path):
    config = RunConfig(**TINY)
    local = run(config, root=tmp_path)
    distributed = launch(config, nprocs=3, backend="gloo", root=tmp_path)
    assert local.summary["push_bytes"] == distributed.summary["push_bytes"]
    assert local.summary["pull_bytes"] == distributed.summary["pull_bytes"]
    assert local.ledger.rows() == distributed.ledger.rows()
    torch.testing.assert_close(torch.tensor(local.metrics["loss"]), torch.tensor(distributed.metrics["loss"]),
                               atol=1e-5, rtol=1e-5)
    assert local.summary["final_accuracy"] == distributed.summary["final_accuracy"]


# make test-long; make test runs both codecs with weight averaging on gloo in test_transport_invariance.py
@pytest.mark.long
@pytest.mark.parametrize("codec", ["binquant(bits=0, coder='huffman')", "quantize(bits=8)"])
def test_quantized_weights_agree_bit_for_bit_across_transports(tmp_path, codec):
    """Three exchanges of quantized weights. A last-bit difference in the local steps moves
    a weight across a bin edge and changes its code: with the replicas' products batched,
    about a third of these ledger rows agreed and accuracy differed by up to 0.04."""
    settings = dict(algorithm="weight_averaging", model="mlp(hidden=(64,))", workers=5, batch_size=20, train_samples=5000,
                    steps=150, eval_every=50, eval_samples=2000, seed=1, push_codec=codec, pull_codec=codec,
                    loss="mse", lr=0.1)
    if codec.startswith("binquant"):
        settings.update(push_policy="entropy_bits(c=5, m=4)", pull_policy="entropy_bits(c=5, m=4)")
    config = RunConfig(**settings)
    local = run(config, root=tmp_path)
    distributed = launch(config, nprocs=5, backend="gloo", root=tmp_path)
    assert_same_run(local, distributed)


def test_per_replica_products_give_each_replica_the_same_bits_for_any_count():
    model = MLP(784, (64, 32), 10, "tanh")
    x, y = torch.randn(5, 20, 784), torch.randint(0, 10, (5, 20))
    many = Replicas(model, 5, loss="mse", per_replica=True)
    many.sgd_step(x, y, 0.1)
    for k in range(5):
        one = Replicas(model, 1, loss="mse", per_replica=True)
        one.sgd_step(x[k:k + 1], y[k:k + 1], 0.1)
        assert all(torch.equal(one.params[n][0], many.params[n][k]) for n in one.params)
