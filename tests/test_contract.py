"""Two small algorithms written only against the contract run through run() in one process
and on 4 gloo processes with identical ledgers and metrics; policies that skip send nothing."""

import pytest

import toy_algorithms
from thinwire.algorithms import check_algorithm
from thinwire.experiment import RunConfig, run
from thinwire.experiment.launch import free_port
from thinwire.experiment.timing import untimed

TINY = dict(model="mlp(hidden=(24,))", steps=8, train_samples=1024, eval_every=4, eval_samples=300, batch_size=16, workers=4)


def _numbers(metrics):
    return untimed(metrics)


def _same_metrics(a: dict, b: dict):
    assert a.keys() == b.keys()
    for k in a:
        if k in ("loss", "test_loss", "train_accuracy", "test_accuracy"):
            assert a[k] == pytest.approx(b[k], abs=1e-5, nan_ok=True), k
        else:
            assert a[k] == b[k], k


# the second toy algorithm in make test-long: one shows make test that a plug-in's contract holds on gloo
@pytest.mark.parametrize("algorithm,extra", [("event_ring", {}), pytest.param("bits_broadcast", {}, marks=pytest.mark.long)])
def test_contract_algorithms_agree_in_process_and_on_gloo(tmp_path, algorithm, extra):
    config = RunConfig(algorithm=algorithm, **TINY, **extra)
    local = run(config, root=tmp_path / "local")
    metrics, rows = toy_algorithms.run_on_gloo(config, 4, free_port(), str(tmp_path / "gloo"))
    assert rows == local.ledger.rows()
    _same_metrics(_numbers(local.metrics), _numbers(metrics))
    assert local.summary["final_accuracy"] > 0.3


def test_event_ring_sends_each_tensor_only_on_some_rounds(tmp_path):
    result = run(RunConfig(algorithm="event_ring", **TINY), root=tmp_path)
    sent = [v for v in result.metrics["ring_sent"] if v is not None]
    assert sent[0] == 1.0 and 0 < min(sent) < 1  # first round: all; later rounds: only events
    tensors = 4  # two Linear layers: weight and bias
    for step, messages in enumerate(result.metrics["ring_messages"]):
        fired = round(result.metrics["ring_sent"][step] * TINY["workers"] * tensors)
        assert messages == 2 * fired  # an event sends to both neighbours; a skip sends nothing
    assert result.summary["peer_sent_messages"] == result.summary["messages"]
    quiet = run(RunConfig(algorithm="event_ring", event="relative_change(threshold=1e9)", **TINY), root=tmp_path)
    assert quiet.summary["messages"] == 2 * TINY["workers"] * tensors  # only the first round


def test_control_message_is_small_and_sets_the_bits(tmp_path):
    result = run(RunConfig(algorithm="bits_broadcast", **TINY), root=tmp_path)
    control = [r for r in result.ledger.rows() if r[1] == "control"]
    assert control and all(r[5] <= 24 for r in control)  # bytes on the wire per control message
    assert all(r[6] == 4 for r in control)  # payload: one float32
    bits = result.metrics["push_bits"]
    assert len(set(bits)) > 1 and set(bits) <= {2, 3, 5, 8}
    # the pushes of a step are exactly as large as that step's bit width makes them
    for step, b in enumerate(bits):
        assert result.metrics["push_payload"][step] == sum(
            r[6] for r in result.ledger.rows() if r[0] == step and r[1] == "push")
    assert result.summary["server_sent_messages"] == result.summary["control_messages"] + result.summary[
        "pull_messages"]


def test_contract_is_checked():
    class Half:
        phases = ("x",)

        def step(self, *a):
            pass

    with pytest.raises(TypeError, match="missing"):
        check_algorithm(Half())
