"""Slim-DP (Sun et al. 2018): the core-explorer policy, the key cache on the wire, merge
decodes, alpha = 1 as Plump-DP, and the two transports agreeing."""

import pytest
import torch

from thinwire.codecs import CodecState, CorruptMessageError, make_codec

from thinwire.engine import wire
from thinwire.experiment import RunConfig, run
from thinwire.experiment.launch import launch
from thinwire.policies import CoreExplorer, Decision, make_policy
from thinwire.experiment.timing import untimed

TINY = dict(model="mlp(hidden=(48, 40))", steps=12, train_samples=1024, eval_every=6, eval_samples=500, batch_size=16, workers=4,
            lr=0.1)
KEYCACHE = make_codec("keycache")


def _numbers(result):
    return untimed(result.metrics)


def test_core_is_the_largest_and_explorer_is_fresh_uniform_and_outside_it():
    policy = CoreExplorer(alpha=0.3, epsilon=0.1, refresh=4, seed=1)
    x = torch.randn(10_000, generator=torch.Generator().manual_seed(0))
    first = policy.decide(0, "w", x)
    core, explorer = first.core, first.keys
    assert first.refresh and core.numel() == 2000 and explorer.numel() == 1000
    outside_core = ~torch.isin(torch.arange(10_000), core)
    assert float(x.abs()[core].min()) >= float(x.abs()[outside_core].max())
    assert not torch.isin(explorer, core).any() and explorer.unique().numel() == explorer.numel()
    second = policy.decide(1, "w", x * -3)  # a different tensor: the core stays until the refresh
    assert not second.refresh and torch.equal(second.core, core) and not torch.equal(second.keys, explorer)
    assert [policy.decide(r, "w", x).refresh for r in range(2, 6)] == [False, False, True, False]
    # uniform outside the core: over many rounds every outside coordinate is drawn about equally
    counts = torch.zeros(10_000)
    for r in range(6, 206):
        counts[policy.decide(r, "w", x).keys] += 1
    outside = counts[~torch.isin(torch.arange(10_000), policy.memory["w.core"])]
    assert counts[policy.memory["w.core"]].sum() == 0
    assert abs(float(outside.mean()) - 200 * 1000 / 8000) < 0.01
    assert float(outside.std()) < 1.2 * (25 * (1 - 1 / 8)) ** 0.5  # binomial(200, 1/8) spread


def test_sampled_selection_is_close_to_the_exact_size():
    x = torch.randn(200_000, generator=torch.Generator().manual_seed(0))
    decision = CoreExplorer(alpha=0.3, epsilon=0.15, selection="sampled", seed=2).decide(0, "w", x)
    assert abs(decision.core.numel() / 30_000 - 1) < 0.05
    assert float(x.abs()[decision.core].min()) >= float(torch.kthvalue(x.abs(), 200_000 - 33_000).values)


def test_policy_state_restores_the_same_decisions():
    a = make_policy("core_explorer(alpha=0.2, epsilon=0.1, refresh=3)", 5)
    x = torch.randn(500)
    a.decide(0, "w", x)
    b = make_policy("core_explorer(alpha=0.2, epsilon=0.1, refresh=3)", 0)
    b.load_state_dict(a.state_dict())
    for r in range(1, 5):
        da, db = a.decide(r, "w", x * r), b.decide(r, "w", x * r)
        assert torch.equal(da.keys, db.keys) and torch.equal(da.core, db.core) and da.refresh == db.refresh


@pytest.mark.parametrize("alpha,epsilon", [(0.2, 0.1), (0.3, 0.15), (0.5, 0.25), (0.3, 0.0), (0.3, 0.3)])
def test_wire_bytes_are_the_formula(alpha, epsilon):
    """(alpha - epsilon) n values + epsilon n (key, value) pairs = (alpha + epsilon) n words,
    plus the keys of the core on a refresh; the signature (a varint) and framing aside."""
    n = 20_000
    policy, state = CoreExplorer(alpha, epsilon, refresh=2, seed=0), CodecState(0)
    core, explorer = policy.sizes(n)
    for r in range(4):
        message = KEYCACHE.encode(torch.randn(n), state, "w", policy.decide(r, "w", torch.randn(n)))
        payload, framing = wire.measure(message)
        signature_bytes = len(wire.format._uvarint(wire.unpack(message)[1].meta["signature"]))
        words = core + 2 * explorer + (core if r % 2 == 0 else 0)
        assert payload == 4 * words + signature_bytes
        assert core + 2 * explorer == round((alpha + epsilon) * n)
        assert framing < 40


def test_a_receiver_with_other_keys_refuses_the_message():
    policy, sender = CoreExplorer(0.3, 0.1, refresh=5, seed=0), CodecState(0)
    x = torch.randn(1000)
    refresh = KEYCACHE.encode(x, sender, "w", policy.decide(0, "w", x))
    values = KEYCACHE.encode(x, sender, "w", policy.decide(1, "w", x))
    with pytest.raises(CorruptMessageError, match="has none"):
        KEYCACHE.decode(values, CodecState(0), "w")  # the refresh was lost
    other_policy, other_sender, receiver = CoreExplorer(0.3, 0.1, refresh=5, seed=1), CodecState(0), CodecState(0)
    KEYCACHE.decode(KEYCACHE.encode(-x, other_sender, "w", other_policy.decide(0, "w", -x + torch.randn(1000))),
                    receiver, "w")  # this receiver caches another core
    with pytest.raises(CorruptMessageError, match="not the ones cached"):
        KEYCACHE.decode(values, receiver, "w")
    receiver = CodecState(0)
    KEYCACHE.decode(refresh, receiver, "w")
    decoded = KEYCACHE.decode(values, receiver, "w")  # the matching cache decodes
    sent = decoded != 0
    assert torch.equal(decoded[sent], x[sent]) and int(sent.sum()) == 300


@pytest.mark.parametrize("refresh", [True, False])
def test_every_flipped_byte_is_detected(refresh):
    policy, sender, receiver = CoreExplorer(0.3, 0.1, refresh=2, seed=0), CodecState(0), CodecState(0)
    x = torch.randn(64, generator=torch.Generator().manual_seed(3))
    first = KEYCACHE.encode(x, sender, "w", policy.decide(0, "w", x))
    KEYCACHE.decode(first, receiver, "w")
    message = first if refresh else KEYCACHE.encode(x, sender, "w", policy.decide(1, "w", x))
    for pos in range(len(message)):
        bad = bytearray(message)
        bad[pos] ^= 0x5A
        with pytest.raises(CorruptMessageError):
            KEYCACHE.decode(bad, receiver, "w")


def test_forged_keys_fail_their_signature():
    policy, sender = CoreExplorer(0.3, 0.1, seed=0), CodecState(0)
    x = torch.randn(1000)
    _, payload = wire.unpack(KEYCACHE.encode(x, sender, "w", policy.decide(0, "w", x)))
    keys = payload.parts["keys"].clone()
    keys[0] = (int(keys[0]) + 1) % 1000
    forged = wire.pack(KEYCACHE.codec_id, KEYCACHE.digest, torch.float32, (1000,),
                       type(payload)(parts={**payload.parts, "keys": keys}, meta=payload.meta))
    with pytest.raises(CorruptMessageError, match="signature"):
        KEYCACHE.decode(forged, CodecState(0), "w")


def test_merge_overwrites_only_the_sent_coordinates():
    policy, sender, receiver = CoreExplorer(0.2, 0.1, seed=0), CodecState(0), CodecState(0)
    x = torch.randn(5000)
    decision = policy.decide(0, "w", x)
    local = torch.full((5000,), 7.0)
    count = KEYCACHE.merge(KEYCACHE.encode(x, sender, "w", decision), local, receiver, "w")
    sent = torch.cat([decision.core, decision.keys])
    assert count == 1000 and torch.equal(local[sent], x[sent])
    kept = torch.ones(5000, dtype=torch.bool)
    kept[sent] = False
    assert bool((local[kept] == 7.0).all())


def test_keycache_needs_a_decision():
    with pytest.raises(ValueError, match="core_explorer"):
        KEYCACHE.encode(torch.randn(10))
    with pytest.raises(ValueError, match="no core"):
        KEYCACHE.encode(torch.randn(10), CodecState(0), "w", Decision(keys=torch.tensor([1])))


@pytest.mark.parametrize("scope", ["global", "tensor"])
def test_alpha_one_epsilon_zero_is_plump_dp(tmp_path, scope):
    plump = run(RunConfig(algorithm="plump_dp", optimizer="sgd", **TINY), root=tmp_path)
    slim = run(RunConfig(algorithm="slim_dp", alpha=1.0, epsilon=0.0, scope=scope, **TINY), root=tmp_path)
    assert slim.metrics["loss"] == plump.metrics["loss"]
    assert slim.metrics["test_accuracy"] == plump.metrics["test_accuracy"]


def test_slim_dp_sends_alpha_plus_epsilon_of_plump_dp(tmp_path):
    plump = run(RunConfig(algorithm="plump_dp", optimizer="sgd", **TINY), root=tmp_path)
    config = RunConfig(algorithm="slim_dp", alpha=0.3, epsilon=0.15, refresh=4, **TINY)
    slim = run(config, root=tmp_path)
    assert slim.summary["push_density"] == pytest.approx(0.3, abs=1e-3)
    assert slim.summary["pull_density"] == pytest.approx(0.3, abs=1e-3)
    # 0.45 N words a round, plus 0.15 N keys every 4th round (3 of the 12 steps)
    ratio = slim.summary["payload_bytes"] / plump.summary["payload_bytes"]
    assert ratio == pytest.approx(0.45 + 0.15 * 3 / 12, abs=2e-3)
    assert slim.summary["codec_seconds"] > 0 and plump.summary["codec_seconds"] > 0
    assert 0.2 < slim.summary["final_accuracy"] <= 1.0  # learning, after 12 steps


# make test-long; make test runs Slim-DP on gloo in test_transport_invariance.py;
# this adds resuming
@pytest.mark.long
def test_in_process_and_gloo_agree_and_resume(tmp_path, interrupt_at):
    config = RunConfig(algorithm="slim_dp", alpha=0.2, epsilon=0.1, refresh=3, selection="sampled", **TINY)
    local = run(config, root=tmp_path)
    assert _numbers(run(config, root=tmp_path / "again")) == _numbers(local)
    distributed = launch(config, nprocs=4, backend="gloo", root=tmp_path)
    assert distributed.ledger.rows() == local.ledger.rows()
    for a, b in zip(local.metrics["loss"], distributed.metrics["loss"]):
        assert a == pytest.approx(b, abs=1e-5)
    assert distributed.summary["final_loss"] == pytest.approx(local.summary["final_loss"], abs=1e-5)
    resume = interrupt_at(7)
    with pytest.raises(KeyboardInterrupt):
        run(config, root=tmp_path / "cut", checkpoint_every=3)
    resume()
    assert _numbers(run(config, root=tmp_path / "cut", checkpoint_every=3)) == _numbers(local)


@pytest.mark.parametrize("values,match", [
    (dict(alpha=0.0), "alpha"), (dict(alpha=1.5), "alpha"), (dict(alpha=0.2, epsilon=0.3), "epsilon"),
    (dict(refresh=0), "refresh"), (dict(selection="approx"), "selection"), (dict(scope="layer"), "scope"),
    (dict(server_scale="median"), "server_scale"), (dict(push_codec="fp32"), "push_codec"),
])
def test_bad_slim_dp_parameters_name_themselves(values, match):
    with pytest.raises(ValueError, match=match):
        RunConfig(algorithm="slim_dp", **values)
