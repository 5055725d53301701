"""EventGraD (Ghosh et al. 2021): the event trigger, its two threshold rules, the Top-K
variant's merge, the ring's receiver copies, and D-PSGD as the horizon-0 case."""

import math

import pytest
import torch

from thinwire.algorithms import EventGraD
from thinwire.codecs import CodecState, make_codec
from thinwire.comm import InProcessTransport
from thinwire.experiment import RunConfig, run
from thinwire.experiment.launch import launch
from thinwire.models import build_model
from thinwire.policies import EventTrigger, make_policy

from same_run import assert_same_run

NORMS = [1.0, 1.5, 1.6, 2.0, 2.1, 3.0, 3.5, 4.0]
TINY = dict(algorithm="eventgrad", model="eventgrad_mnist_cnn", workers=4, batch_size=16, steps=40,
            train_samples=2560, eval_every=20, eval_samples=500, sampling="sequential", lr=0.05)


def _tests(policy, norms):
    """(sent?, threshold at the test) for a one-entry tensor whose norm follows ``norms``."""
    out = []
    for r, n in enumerate(norms):
        x = torch.tensor([n])
        decision = policy.decide(r, "w", x)
        if decision.send:
            policy.sent(r, "w", x, decision)
        out.append((decision.send, policy.trace["w"][1]))
    return out


def test_paper_rule_on_a_hand_computed_sequence():
    """horizon 2, h = 2, 2 forced iterations. t1: slope 1/1 -> history [0, 1], threshold
    2 x 0.5 = 1; t2: slope 0.5 -> [1, 0.5], threshold 1.5, fixed until the next event; t6
    moves 3.0 - 1.5 = 1.5 >= 1.5: slope 1.5 / 4 -> [0.5, 0.375], threshold 0.875; t8
    moves 1.0: slope 0.5 -> [0.375, 0.5], 0.875 again."""
    result = _tests(EventTrigger(horizon=2.0, history=2, rule="paper", forced=2), NORMS)
    assert [s for s, _ in result] == [True, True, False, False, False, True, False, True]
    assert [t for _, t in result] == pytest.approx([0, 1.0, 1.5, 1.5, 1.5, 1.5, 0.875, 0.875])


def test_code_rule_on_a_hand_computed_sequence():
    """horizon 0.5: the threshold is the mean slope at an event, halved before every test.
    t1: 0 (forced), mean 0.5; t2: 0.25 (forced), mean 0.75; t3: 0.375, no; t4: 0.1875,
    moved 0.5: slope 0.5 / 2 -> [0.5, 0.25], 0.375; t5: 0.1875, moved 0.1, no; t6:
    0.09375, moved 1.0: slope 0.5 -> 0.375; t7: 0.1875, moved 0.5, slope 0.5 -> 0.5;
    t8: 0.25, moved 0.5."""
    result = _tests(EventTrigger(horizon=0.5, history=2, rule="code", forced=2), NORMS)
    assert [s for s, _ in result] == [True, True, False, True, False, True, True, True]
    assert [t for _, t in result] == pytest.approx([0, 0.25, 0.375, 0.1875, 0.1875, 0.09375, 0.1875, 0.25])


def test_the_rules_agree_at_horizon_one():
    g = torch.Generator().manual_seed(0)
    norms = torch.cumsum(torch.rand(60, generator=g), 0).tolist()
    assert _tests(EventTrigger(horizon=1.0, rule="paper", forced=3), norms) == \
        _tests(EventTrigger(horizon=1.0, rule="code", forced=3), norms)


def test_a_tensor_whose_norm_does_not_move_sends_nothing_after_the_forced_iterations():
    policy = EventTrigger(horizon=1.0, forced=29)
    x = torch.randn(50)
    sends = []
    for r in range(60):
        decision = policy.decide(r, "w", x)
        sends.append(decision.send)
        if decision.send:
            policy.sent(r, "w", x, decision)
    assert sends == [True] * 29 + [False] * 31
    zero = EventTrigger(horizon=0.0, forced=0)  # horizon 0: every move of the norm is an event, and only a move
    for r, scale in enumerate([1.0, 2.0, 2.0, 3.0, 3.0, 3.0, 4.0]):
        decision = zero.decide(r, "w", x * scale)
        assert decision.send == (r in (0, 1, 3, 6))
        if decision.send:
            zero.sent(r, "w", x * scale, decision)


def test_first_threshold_is_about_half_the_norm_without_forced_iterations():
    policy = EventTrigger(horizon=1.0, history=2, forced=0)
    x = torch.full((100,), 0.5)  # norm 5
    assert policy.decide(0, "w", x).send
    policy.sent(0, "w", x)
    assert float(policy.memory["w/state"][2]) == pytest.approx(2.5)


def test_topk_merge_touches_only_the_sent_entries_and_the_copies_stay_equal():
    """The receiver's copy equals the sender's last-sent copy after every event; the
    entries not sent keep their values on both ends."""
    g = torch.Generator().manual_seed(3)
    policy = EventTrigger(horizon=0.0, forced=0, topk=0.1)
    codec = make_codec("topk")
    start = torch.randn(40, generator=g)
    copy = start.clone()
    x = start.clone()  # the first tensor the policy sees is the copy the receiver starts from
    for r in range(12):
        x = x + 0.1 * torch.randn(40, generator=g) if r else x
        decision = policy.decide(r, "w", x)
        assert decision.send and decision.keys.numel() == math.ceil(0.1 * 40)
        message = codec.encode(x, CodecState(0), "w", decision)
        before = copy.clone()
        assert codec.merge(message, copy, CodecState(0), "w") == 4
        policy.sent(r, "w", x, decision)
        untouched = torch.ones(40, dtype=torch.bool)
        untouched[decision.keys] = False
        assert torch.equal(copy[untouched], before[untouched])
        assert torch.equal(copy[decision.keys], x[decision.keys])
        assert torch.equal(copy, policy.memory["w/sent"])
    # Top-K picks the entries that moved most since they were last sent
    y = policy.memory["w/sent"].clone()
    y[[3, 17, 29, 31]] += 5.0
    assert policy.decide(12, "w", y).keys.tolist() == [3, 17, 29, 31]


def test_policy_specs_are_checked():
    assert make_policy("event(horizon=0.9, rule='code')").spec() == \
        "event(horizon=0.9, history=2, rule='code', forced=29, topk=0.0)"
    for spec, match in (("event(horizon=-1)", "horizon=-1 is not allowed"), ("event(rule='x')", "rule='x'"),
                        ("event(history=0)", "history=0"), ("event(topk=2)", "topk=2"),
                        ("event(forced=1.5)", "forced=1.5")):
        with pytest.raises(ValueError, match=match):
            make_policy(spec)


def test_config_checks_the_ring_and_the_codec():
    with pytest.raises(ValueError, match="workers=2 is not allowed: a ring"):
        RunConfig(**{**TINY, "workers": 2})
    with pytest.raises(ValueError, match="push_codec='fp32' with push_policy=.*topk=0.1"):
        RunConfig(**TINY, push_policy="event(topk=0.1)")
    with pytest.raises(ValueError, match="pull_codec='fp16' is not allowed"):
        RunConfig(**TINY, pull_codec="fp16")
    with pytest.raises(ValueError, match="sampling='random' is not allowed"):
        RunConfig(**{**TINY, "sampling": "random"})


def _algo(policy, codec="fp32", peers=4):
    torch.manual_seed(0)
    model = build_model("eventgrad_mnist_cnn", (1, 28, 28), 10, 0)
    section = EventGraD.Section(push_policy=policy, push_codec=codec, lr=0.05)
    return EventGraD(model, InProcessTransport(), peers, section, seed=1)


@pytest.mark.parametrize("policy,codec", [("event(horizon=1.0, forced=3)", "fp32"),
                                          ("event(horizon=1.0, forced=3, topk=0.1)", "topk")])
def test_receivers_copy_always_equals_what_the_sender_last_sent(policy, codec):
    algo = _algo(policy, codec)
    g = torch.Generator().manual_seed(0)
    expected = {(j, n): {name: p[j].clone() for name, p in algo.replicas.params.items()}
                for j in range(4) for n in algo.neighbours(j)}  # receiver j's copy of n: the initial model
    for step in range(12):
        before = {name: p.clone() for name, p in algo.replicas.params.items()}
        rows = len(algo.transport.ledger)
        algo.step(step, torch.randn(4, 16, 1, 28, 28, generator=g), torch.randint(0, 10, (4, 16), generator=g))
        for s, r, name in zip(*(algo.transport.ledger.columns[c][rows:] for c in ("sender", "receiver", "tensor"))):
            sent = algo.policies[s].memory.get(f"{name}/sent")
            expected[(r, s)][name] = sent.view_as(before[name][s]).clone() if codec == "topk" else before[name][s]
        for j in range(4):
            left, right = algo.neighbours(j)
            for name in algo.replicas.params:
                assert torch.equal(algo.left[name][j], expected[(j, left)][name])
                assert torch.equal(algo.right[name][j], expected[(j, right)][name])
    assert len(algo.transport.ledger) < 12 * 4 * 2 * 8  # events skipped some messages


def test_step_averages_with_the_copies_then_applies_the_earlier_gradient():
    algo = _algo("always")
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(4, 16, 1, 28, 28, generator=g), torch.randint(0, 10, (4, 16), generator=g)
    algo.step(0, x, y)
    before = {n: p.clone() for n, p in algo.replicas.params.items()}
    state = algo.replicas.state_dict()  # the dropout generators: step 1 draws the same masks
    _, _, grads = algo.replicas.loss_and_grads(x, y)
    grads = {n: t.clone() for n, t in grads.items()}
    algo.replicas.load_state_dict(state)
    algo.step(1, x, y)
    for name, p in algo.replicas.params.items():
        mixed = (before[name] + before[name].roll(1, 0) + before[name].roll(-1, 0)) / 3
        torch.testing.assert_close(p, mixed - 0.05 * grads[name], atol=1e-6, rtol=0)


def test_horizon_zero_is_d_psgd_exactly(tmp_path):
    dpsgd = run(RunConfig(**TINY, push_policy="always"), root=tmp_path)
    zero = run(RunConfig(**TINY, push_policy="event(horizon=0.0, forced=0)"), root=tmp_path)
    assert dpsgd.ledger.rows() == zero.ledger.rows()
    assert dpsgd.metrics["loss"] == zero.metrics["loss"]
    assert dpsgd.summary["ring_messages"] == 2 * 8 * 4 * 40
    event = run(RunConfig(**TINY, push_policy="event(horizon=1.0, forced=5)"), root=tmp_path)
    assert event.summary["ring_messages"] < dpsgd.summary["ring_messages"]
    assert set(event.metrics) >= {"norm/net.0.weight", "threshold/net.0.weight", "tensors_sent_share"}


def test_sequential_sampling_gives_contiguous_shards_in_the_same_order():
    from thinwire.datasets import BatchStream, partition
    shards = partition(100, 4, seed=0, sampling="sequential")
    assert [s.tolist() for s in shards] == [list(range(25 * k, 25 * (k + 1))) for k in range(4)]
    stream = BatchStream(shards[1], 5, seed=0, shuffle=False)
    first = [stream.next_indices().tolist() for _ in range(5)]
    assert first == [list(range(25 + 5 * b, 30 + 5 * b)) for b in range(5)]
    assert [stream.next_indices().tolist() for _ in range(5)] == first


# make test-long; make test runs EventGraD with Top-K on gloo in test_transport_invariance.py (dense in
# make test-long's share of it); this adds the CNN
@pytest.mark.long
@pytest.mark.parametrize("policy,codec", [("event(horizon=1.0, forced=5)", "fp32"),
                                          ("event(horizon=1.0, forced=5, topk=0.1)", "topk")])
def test_in_process_and_gloo_agree(tmp_path, policy, codec):
    """One rank per peer: identical ledgers (every event decided alike) and the same losses."""
    config = RunConfig(**TINY, push_policy=policy, push_codec=codec)
    local = run(config, root=tmp_path)
    distributed = launch(config, nprocs=4, backend="gloo", root=tmp_path)
    assert_same_run(local, distributed)


def test_random_send_draws_every_round_and_forces_the_first():
    policy = make_policy("random_send(p=0.25, forced=3)", seed=7)
    sends = [policy.decide(r, "w", torch.zeros(3)).send for r in range(4000)]
    assert sends[:3] == [True] * 3
    assert abs(sum(sends[3:]) / 3997 - 0.25) < 0.03
    again = make_policy("random_send(p=0.25, forced=3)", seed=7)
    assert [again.decide(r, "w", torch.ones(3)).send for r in range(4000)] == sends  # the tensor plays no part
    with pytest.raises(ValueError, match="p=1.5 is not allowed"):
        make_policy("random_send(p=1.5)")


def test_heartbeat_sends_a_tensor_left_unsent_for_max_gap_iterations():
    plain, beat = EventTrigger(horizon=1.0, forced=2), EventTrigger(horizon=1.0, forced=2, max_gap=4)
    x = torch.randn(20)
    sends = {}
    for name, policy in (("plain", plain), ("beat", beat)):
        sends[name] = []
        for r in range(14):
            decision = policy.decide(r, "w", x)
            sends[name].append(decision.send)
            if decision.send:
                policy.sent(r, "w", x, decision)
    assert sends["plain"] == [True, True] + [False] * 12
    assert [r + 1 for r, s in enumerate(sends["beat"]) if s] == [1, 2, 6, 10, 14]  # every 4 iterations after the last
    assert "max_gap" not in plain.spec() and beat.spec().endswith("max_gap=4)")
    with pytest.raises(ValueError, match="max_gap=-1 is not allowed"):
        make_policy("event(max_gap=-1)")


def test_mean_motion_splits_the_mean_models_moves_by_part():
    """Three peers of one two-entry tensor: the averaging moves the mean by (-0.1, 0), the
    gradient step by (0.4, 0.3): share = <A + G, G> / <G, G> = 1 + (-0.04) / 0.25 = 0.84."""
    from types import SimpleNamespace
    from thinwire.algorithms.mean_motion import MeanMotion
    replicas = SimpleNamespace(params={"w": torch.tensor([[1.0, 0.0], [2.0, 0.0], [3.0, 0.0]])})
    motion = MeanMotion(replicas)
    assert motion.share() == 1.0
    motion.mark()
    replicas.params["w"][:, 0] -= 0.1
    motion.add("averaging")
    replicas.params["w"] += torch.tensor([0.4, 0.3])
    motion.add("gradient")
    assert motion.share() == pytest.approx(0.84, abs=1e-6)  # float32 parameters
    saved = motion.state_dict()
    other = MeanMotion(replicas)
    other.load_state_dict(saved)
    assert other.share() == pytest.approx(0.84, abs=1e-6)


def test_lagging_copies_pull_the_mean_model_back_and_full_copies_do_not(tmp_path):
    """D-PSGD's averaging keeps the peers' mean (W doubly stochastic): the mean model moves by
    its summed gradient steps exactly. Top-10% copies lag their senders, so the averaging
    cancels part of the steps."""
    dpsgd = run(RunConfig(**TINY, push_policy="always"), root=tmp_path)
    topk = run(RunConfig(**TINY, push_policy="event(horizon=0.0, forced=0, topk=0.1)", push_codec="topk(ratio=0.1)"),
               root=tmp_path)
    assert dpsgd.metrics["mean_step_share"][-1] == pytest.approx(1.0, abs=1e-5)
    assert topk.metrics["mean_step_share"][-1] < 0.9


def test_top_k_events_record_the_tensors_norm_or_the_receivers_copys():
    x0 = torch.zeros(10)
    x1 = torch.arange(1.0, 11.0)  # the change: 1..10; top-20% sends the entries 9 and 10
    for norm_of, recorded in (("tensor", float(torch.linalg.vector_norm(x1))), ("copy", math.hypot(9.0, 10.0))):
        policy = EventTrigger(horizon=1.0, forced=1, topk=0.2, norm_of=norm_of)
        first = policy.decide(0, "w", x0)
        policy.sent(0, "w", x0, first)
        decision = policy.decide(1, "w", x1)
        assert decision.send and sorted(decision.keys.tolist()) == [8, 9]
        policy.sent(1, "w", x1, decision)
        assert float(policy.memory["w/state"][0]) == pytest.approx(recorded)
    assert "norm_of" not in EventTrigger(topk=0.1).spec() and EventTrigger(topk=0.1, norm_of="copy").spec().endswith(
        "norm_of='copy')")
    with pytest.raises(ValueError, match="norm_of='sent' is not allowed"):
        make_policy("event(topk=0.1, norm_of='sent')")
    with pytest.raises(ValueError, match="norm_of='copy' is not allowed with topk=0"):
        make_policy("event(norm_of='copy')")
