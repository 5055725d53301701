"""Shared measures (experiment/measures.py), typed traffic on a Result, and the network
as analysis: one finished run priced on any network without training again."""

import pytest

from thinwire.comm import network_preset
from thinwire.experiment import RunConfig, measures, run

TINY = dict(model="mlp(hidden=(32,))", steps=8, train_samples=512, eval_every=2, eval_samples=200, batch_size=16, workers=2,
            push_codec="qsgd(bits=4)")


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    return run(RunConfig(algorithm="plump_dp", **TINY), root=tmp_path_factory.mktemp("measures"))


def test_traffic_by_phase_role_and_whole_run_adds_up_from_the_ledger(result):
    push, pull = result.phase("push"), result.phase("pull")
    rows = [r for r in result.ledger.rows() if r[2] != r[3]]
    assert push.payload == sum(r[6] for r in rows if r[1] == "push")
    assert push.bytes == sum(r[5] for r in rows if r[1] == "push") and push.framing == push.bytes - push.payload
    assert result.total().payload == push.payload + pull.payload == measures.payload(result)
    assert result.total().messages == len(rows)
    assert result.role("worker").payload == push.payload and result.role("server").payload == pull.payload
    assert measures.payload(result, ("push",), start=4) == sum(r[6] for r in rows if r[1] == "push" and r[0] >= 4)
    assert result.phases() == ["pull", "push"]
    with pytest.raises(KeyError, match=r"phase='ring': this result's phases are \['pull', 'push'\]"):
        result.phase("ring")
    with pytest.raises(KeyError, match="role='peer'"):
        result.role("peer")


def test_times_accuracy_and_time_to_target(result):
    m = result.metrics  # each step's codec time is its sides' (exact); medians of noisy 8-step runs need not add up
    assert m["codec_seconds"] == pytest.approx([w + s for w, s in zip(m["worker_codec_seconds"], m["server_codec_seconds"])])
    assert measures.codec_seconds(result) == result.seconds("codec_seconds")
    assert measures.codec_seconds(result, part="encode") > 0
    net = "ethernet_10g"
    priced = network_preset(net).seconds_per_step(result.ledger, result.config.steps)
    assert measures.priced_seconds(result, net, start=2) == pytest.approx(priced[2:].sum())
    images = 2 * 16 * 8
    assert measures.images_per_second(result, net) == pytest.approx(
        images / (measures.measured_seconds(result, "compute_seconds") + priced.sum()))
    accuracies = [a for a in result.metrics["test_accuracy"] if a is not None]
    assert measures.final_accuracy(result, 2) == pytest.approx(sum(accuracies[-2:]) / 2)
    first = next(s for s, a in enumerate(result.metrics["test_accuracy"]) if a is not None)
    reached = measures.time_to_accuracy(result, result.metrics["test_accuracy"][first], net)
    assert reached is not None and reached > 0
    assert measures.time_to_accuracy(result, 1.01, net) is None
    with pytest.raises(KeyError, match="is not a measured time"):
        measures.measured_seconds(result, "comm_seconds")


def test_the_framing_and_checksum_are_measured_apart_inside_the_codec_time(result):
    m = result.metrics
    parts = ("select", "encode", "decode", "frame")
    for step in range(result.steps):  # every step encodes (push and pull): framing on both sides
        assert m["worker_frame_seconds"][step] > 0 and m["server_frame_seconds"][step] > 0
        assert m["frame_seconds"][step] == pytest.approx(m["worker_frame_seconds"][step] + m["server_frame_seconds"][step])
        for side in ("worker", "server"):
            assert m[f"{side}_codec_seconds"][step] == pytest.approx(sum(m[f"{side}_{p}_seconds"][step] for p in parts))
    assert 0 < result.summary["frame_seconds"] < result.summary["codec_seconds"]


def test_the_wire_clock_counts_packing_and_checking_not_a_writers_work():
    import time

    import torch

    from thinwire.engine import wire
    from thinwire.engine import PartWriter, Payload

    def slow(out):
        time.sleep(0.05)  # the codec's own work, written into the frame
        out.zero_()

    before = wire.clock.spent()
    message = wire.pack(1, 2, torch.float32, (4,), Payload(parts={"values": torch.ones(4)}))
    packed = wire.clock.spent() - before
    assert 0 < packed < 0.05
    wire.unpack(message)
    assert wire.clock.spent() - before > packed
    before = wire.clock.spent()
    wire.pack(1, 2, torch.float32, (4,), Payload(parts={"values": PartWriter(torch.float32, 4, slow)}))
    assert 0 < wire.clock.spent() - before < 0.02  # the writer's 50 ms are not framing


def test_the_network_is_priced_not_trained(tmp_path):
    first = run(RunConfig(algorithm="plump_dp", network="ethernet_10g", **TINY), root=tmp_path)
    other = RunConfig(algorithm="plump_dp", network="net_10mbs", **TINY)
    assert other.key() == first.config.key()
    again = run(other, root=tmp_path)  # a cache hit: same ledger and losses, priced on the other network
    assert again.config.network == "net_10mbs" and again.metrics["loss"] == first.metrics["loss"]
    assert again.provenance == first.provenance  # not retrained
    assert again.summary["comm_seconds"] == pytest.approx(measures.priced_seconds(first, "net_10mbs"))
    assert again.summary["comm_seconds"] > 10 * first.summary["comm_seconds"]


def test_a_time_spent_on_some_steps_only_is_its_cost_per_busy_step_times_their_share():
    from thinwire.experiment.timing import median_after_warmup, median_when_busy
    every = [9.0] + [1.0, 2.0, 3.0] * 4  # the first step is the warm-up
    assert median_after_warmup(every) == 2.0 and median_when_busy(every) == 2.0
    third = [9.0] + [0.0, 0.0, 0.03, 0.0, 0.0, 0.05, 0.0, 0.0, 0.04]  # an exchange every 3 steps
    assert median_after_warmup(third) == pytest.approx(0.04 / 3) and median_when_busy(third) == 0.04
    assert median_after_warmup([0.0] * 12) == 0.0 == median_when_busy([0.0] * 12)
    assert median_after_warmup([]) == 0.0


def test_weight_averaging_every_third_step_reports_its_codec_time(tmp_path):
    config = RunConfig(algorithm="weight_averaging", exchange_every=3, **{**TINY, "steps": 6})
    summary = run(config, root=tmp_path).summary
    assert summary["codec_seconds_per_step"] > 0 and summary["codec_seconds"] > 0
    assert summary["codec_seconds_per_exchange"] > summary["codec_seconds_per_step"]


def test_a_commit_is_dirty_for_changed_code_not_for_executed_notebooks(tmp_path):
    """papermill writes reports/<name>.ipynb as it runs: that must not mark its own runs
    "+dirty"; a changed notebook or library file does."""
    import subprocess

    from thinwire.experiment.timing import _git_commit

    def git(*args):
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)
    git("init", "-q")
    for name in ("reports/a.ipynb", "long-runs/b.ipynb", "benchmarks/c.json", "notebooks/a.ipynb", "lib/x.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("0")
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "c")
    clean = _git_commit(tmp_path)
    assert len(clean) == 40
    (tmp_path / "reports/a.ipynb").write_text("executed")
    (tmp_path / "long-runs/b.ipynb").write_text("executed")
    (tmp_path / "benchmarks/c.json").write_text("measured")  # a benchmark's kept results
    assert _git_commit(tmp_path) == clean
    for name in ("notebooks/a.ipynb", "lib/x.py"):
        (tmp_path / name).write_text("changed")
        assert _git_commit(tmp_path) == clean + "+dirty", name
        (tmp_path / name).write_text("0")
