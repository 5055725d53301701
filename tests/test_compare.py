"""The cross-paper comparison: its methods are the papers' recipes, its prices are the network
model's, its step times and crossovers follow their definitions (papers/compare)."""

import numpy as np
import pytest

from thinwire.comm import Ledger, NetworkModel, PhaseLoads
from thinwire.experiment import RunConfig, run
from thinwire.papers import paper
from thinwire.papers.compare import (ALLGATHER, COMPOSED, FP16_ALLREDUCE, FROM_PAPERS, FixedCosts, StepTimes, compare_configs,
                                     compare_recipes, crossover, crossovers, pareto, time_to_target, which_when)


def test_every_paper_method_is_its_papers_recipe_and_composed_ones_change_one_codec():
    table = compare_recipes()
    for label, (name, theirs) in FROM_PAPERS.items():
        recipe = paper(name).recipes[theirs]
        assert (table[label].algorithm, table[label].settings) == (recipe.algorithm, recipe.settings)
    for label, parent in ALLGATHER.items():  # the parent's codec, on an all-gather among the workers
        assert table[label].algorithm == "allreduce" and table[label].settings["exchange"] == "allgather"
        assert table[label].settings["push_codec"] == table[parent].settings["push_codec"]
    for label, (parent, change) in COMPOSED.items():
        assert set(change) == {"push_codec"}
        assert {k: v for k, v in table[label].settings.items() if k != "push_codec"} == \
            {k: v for k, v in table[parent].settings.items() if k != "push_codec"}
    assert list(table)[:6] == ["all-reduce fp32", FP16_ALLREDUCE, "all-reduce bf16", "PowerSGD rank 1",
                               "PowerSGD rank 2", "PowerSGD rank 4"]
    with pytest.raises(ValueError, match="'carrier pigeon'"):
        compare_recipes(("carrier pigeon",))
    configs = compare_configs(profile="smoke", methods=(FP16_ALLREDUCE, "EventGraD"), seeds=(3, 4))
    assert list(configs) == [(FP16_ALLREDUCE, 3), (FP16_ALLREDUCE, 4), ("EventGraD", 3), ("EventGraD", 4)]
    assert configs[("EventGraD", 4)].seed == 4 and configs[("EventGraD", 4)].algorithm == "eventgrad"
    with pytest.raises(ValueError, match="seeds"):
        compare_configs(profile="smoke", seeds=(-1,))


@pytest.mark.parametrize("label", ["all-reduce fp32", "PowerSGD rank 2", "EventGraD", "Plump-DP (PS, fp32)"])
def test_loads_price_a_ledger_as_the_model_does(tmp_path, label):
    config = compare_recipes((label,))[label].apply(RunConfig(model="mlp(hidden=(16,))", workers=3, steps=6,
                                                              eval_every=6, eval_samples=100, train_samples=600))
    result = run(config, root=tmp_path, progress=False)
    for per_peer, node_messages in ((False, False), (True, False), (False, True), (True, True)):
        model = NetworkModel("x", 3e6, 1e-3, 2e-4, 0.05, per_peer, node_messages)
        priced = model.price(PhaseLoads(result.ledger, per_peer), result.steps)
        # the same sums, added in another order where a step has many phases
        np.testing.assert_allclose(priced, model.seconds_per_step(result.ledger, result.steps), rtol=1e-12)
        assert priced.sum() > 0
    with pytest.raises(ValueError, match="per_peer"):
        NetworkModel("x", 1.0, 0.0).price(PhaseLoads(result.ledger, True), result.steps)


class _Fake:
    """A finished run: 6 steps, worker 0 sends 1,000 bytes to worker 1 on steps 2 and 5."""

    def __init__(self):
        self.steps = 6
        self.ledger = Ledger()
        for step in (2, 5):
            self.ledger.record(step, "push", 0, 1, "w", 1000, 990)
        self.metrics = {"compute_seconds": [9.0, 1.0, 4.0, 1.0, 1.0, 4.0], "codec_seconds": [0, 0, 3.0, 0, 0, 3.0],
                        "test_accuracy": [None, 0.5, None, 0.8, None, 0.9]}


def test_step_times_take_medians_apart_for_steps_that_talk_and_price_both_schedules():
    times = StepTimes(_Fake(), warmup=1)
    assert times.ranks == 2
    assert times.compute.tolist() == [1.0, 1.0, 4.0, 1.0, 1.0, 4.0]  # step 0 is warm-up: its 9 s is not a median
    assert times.codec.tolist() == [0, 0, 3.0, 0, 0, 3.0]
    costs = FixedCosts(latency_s=0.5, message_latency_s=0.25, wire_overhead=0.0)
    comm = times.comm(costs, 1000.0)  # 1 s of bytes + 0.5 s (the phase) + 0.25 s (one peer)
    assert comm.tolist() == [0, 0, 1.75, 0, 0, 1.75]
    assert times.step_seconds(costs, 1000.0, "sequential").tolist() == [1, 1, 5.75, 1, 1, 5.75]
    # overlap: forward 1/3 of the gradient work, max(backward, comm), codec after
    overlap = times.step_seconds(costs, 1000.0, "overlap")
    assert overlap[2] == pytest.approx(1 / 3 + max(2 / 3, 1.75) + 3.0) and overlap[0] == pytest.approx(1.0)
    assert times.time_to(0.8, costs, 1000.0, "sequential") == pytest.approx(1 + 1 + 5.75 + 1)
    assert times.time_to(0.95, costs, 1000.0, "sequential") == float("inf")
    with pytest.raises(ValueError, match="schedule='eager'"):
        times.step_seconds(costs, 1000.0, "eager")


def test_step_times_leave_the_workbenchs_framing_out_unless_asked():
    fake = _Fake()
    fake.metrics = {**fake.metrics, "frame_seconds": [0, 0, 1.0, 0, 0, 1.0]}
    times, framed = StepTimes(fake, warmup=1), StepTimes(fake, warmup=1, framing=True)
    assert times.compute.tolist() == [1.0, 1.0, 3.0, 1.0, 1.0, 3.0] and times.codec.tolist() == [0, 0, 2.0, 0, 0, 2.0]
    assert framed.compute.tolist() == [1.0, 1.0, 4.0, 1.0, 1.0, 4.0] and framed.codec.tolist() == [0, 0, 3.0, 0, 0, 3.0]
    assert times.frame.tolist() == framed.frame.tolist() == [0, 0, 1.0, 0, 0, 1.0]


def test_the_crossover_is_where_the_ratio_first_reaches_one_on_log_axes():
    grid = np.geomspace(1e6, 1e10, 9)
    baseline = np.ones_like(grid)
    assert crossover(grid, grid / 1e8, baseline, margin=0) == pytest.approx(1e8)  # ratio = bandwidth / 1e8
    assert crossover(grid, np.sqrt(grid / 3e7), baseline, margin=0) == pytest.approx(3e7)
    assert crossover(grid, grid / 1e8, baseline) == pytest.approx(0.99e8)           # 1% faster, at least
    assert crossover(grid, grid * 0 + 0.995, baseline) is None                      # within 1%: not paying
    assert crossover(grid, grid * 0 + 0.5, baseline) == float("inf")           # pays everywhere
    assert crossover(grid, grid * 0 + 2.0, baseline) is None                   # nowhere
    # pays low, not in the middle, again high: the first stop counts
    ratio = np.array([0.5, 0.5, 2, 2, 2, 0.5, 0.5, 0.5, 0.5])
    assert 10 ** 6.5 < crossover(grid, ratio, baseline) < 10 ** 7
    assert crossover(grid, np.where(grid > 5e6, np.inf, 0.5), baseline) == pytest.approx(1e6 * 10 ** 0.5)


def test_tables_follow_from_the_times():
    class Times:
        def __init__(self, a):
            self.a = a

        def time_to(self, target, costs, bandwidth, schedule):
            return self.a * 1e8 / bandwidth + 1.0  # comm shrinks with bandwidth; 1 s of compute

    step_times = {(FP16_ALLREDUCE, 0): Times(1.0), ("tiny", 0): Times(0.1), ("tiny", 1): Times(0.1),
                  ("slow", 0): Times(2.0)}
    times = time_to_target(step_times, 0.9, FixedCosts(), grid=np.geomspace(1e7, 1e10, 4))
    assert len(times) == 4 * 2 * 4
    cross = crossovers(times)
    # tiny's lead shrinks to under 1% between 1 and 10 GB/s (1.0010 s against 1.0100 s at 10 GB/s)
    assert 1e3 < cross.loc["tiny", "sequential"] < 1e4 and np.isnan(cross.loc["slow", "overlap"])
    when = which_when(times, marks={"10 MB/s": 1e7})
    assert when.loc["10 MB/s", "fastest (sequential)"] == "tiny"
    assert when.loc["10 MB/s", f"speed-up over {FP16_ALLREDUCE} (sequential)"] == pytest.approx(11 / 2)


def test_the_pareto_front_keeps_what_nothing_beats_on_both():
    import pandas as pd
    frame = pd.DataFrame([{"method": "a", "final accuracy": 0.9, "bytes": 100}, {"method": "b", "final accuracy": 0.8, "bytes": 10},
                          {"method": "c", "final accuracy": 0.8, "bytes": 50}, {"method": "d", "final accuracy": 0.95, "bytes": 1000}])
    assert pareto(frame) == ["a", "b", "d"]


# -- the optimizer protocol (protocol.py) -------------------------------------------------

def test_the_shared_optimizer_replaces_each_papers_and_keeps_the_method():
    from thinwire.papers.compare import optimizer_of, shared
    table = compare_recipes()
    for label, recipe in table.items():
        common = shared(recipe, 0.2).apply(RunConfig(), seed=0)
        assert optimizer_of(common) == "sgd lr 0.2", label
        kept = [k for k in recipe.settings if k not in ("lr", "optimizer", "momentum", "weight_decay", "lr_decay", "l1")]
        # codecs, policies, schedule and warm-up stay as the method has them
        theirs = recipe.apply(RunConfig(), seed=0).section
        assert {k: getattr(common.section, k) for k in kept} == {k: getattr(theirs, k) for k in kept}, label
    drop = shared(table["gradient dropping 99%"], 0.1).apply(RunConfig()).section
    assert (drop.optimizer, drop.lr, drop.warmup_steps, drop.schedule) == ("sgd", 0.1, 100, "async")
    oland = shared(table["Oland & Raj (c=5, M=4)"], 0.1).apply(RunConfig()).section
    assert (oland.lr_decay, oland.l1) == (1.0, 0.0)
    assert optimizer_of(table["MQGrad"].apply(RunConfig())) == "sgd lr 0.2, weight decay 0.00175"
    assert optimizer_of(table["Oland & Raj (c=5, M=4)"].apply(RunConfig())) == "sgd lr 0.1, L1 1e-05, lr x 0.95 per epoch"


class _Done:
    def __init__(self, accuracy):
        self.summary = {"final_accuracy": accuracy}


def test_the_best_lr_is_the_highest_final_accuracy_and_the_grid_doubles():
    from thinwire.papers.compare import at_edge, best_lrs
    from thinwire.papers.compare.protocol import check_grid
    tuning = {("a", 0.05): _Done(0.8), ("a", 0.1): _Done(0.9), ("a", 0.2): _Done(0.9), ("a", 0.4): _Done(None),
              ("b", 0.05): _Done(0.5), ("b", 0.1): _Done(float("nan")), ("b", 0.2): _Done(0.4), ("b", 0.4): _Done(0.6)}
    assert best_lrs(tuning) == {"a": 0.1, "b": 0.4}  # a tie takes the smaller lr; None and NaN count as 0
    assert at_edge({"a": 0.1, "b": 0.4}, (0.05, 0.1, 0.2, 0.4)) == ["b"]
    for bad in ((0.1, 0.2, 0.4), (0.1, 0.2, 0.3, 0.4), (0.0, 0.0, 0.0, 0.0), (-0.1, -0.2, -0.4, -0.8)):
        with pytest.raises(ValueError, match="lr_grid"):
            check_grid(bad)


def test_the_plan_tunes_on_its_own_seed_and_the_same_lr_table_shares_one_optimizer():
    from thinwire.papers.compare import PAPERS_OWN, TUNING_SEED, compare_plan, optimizer_of
    plan = compare_plan(profile="smoke")
    assert FP16_ALLREDUCE in plan.recipes and len(plan.lrs) >= 4 and TUNING_SEED not in plan.seeds
    tuning = plan.tuning()
    assert set(tuning) == {(m, lr) for m in plan.recipes for lr in plan.lrs}
    assert {c.seed for c in tuning.values()} == {TUNING_SEED}
    best = {m: 0.1 for m in plan.recipes} | {FP16_ALLREDUCE: 0.2, "EventGraD": 0.05}
    same, own = plan.evaluation(best)
    assert {optimizer_of(c) for c in same.values()} == {"sgd lr 0.2"}
    assert {c.seed for c in same.values()} == set(plan.seeds)
    assert optimizer_of(own[("EventGraD", plan.seeds[0])]) == "sgd lr 0.05"
    papers = plan.papers(best)  # EventGraD's own setting (SGD at 0.05) is its own-lr row already
    assert {m for m, _ in papers} == {"gradient dropping 99%" + PAPERS_OWN, "MQGrad" + PAPERS_OWN}
    with pytest.raises(ValueError, match="tuning seed"):
        compare_plan(profile="smoke", seeds=(0, TUNING_SEED))


def test_paying_intervals_name_every_range_where_a_method_beats_the_baseline():
    import pandas as pd
    from thinwire.papers.compare import fastest_at, paying_intervals
    grid = [1e7, 1e8, 1e9, 1e10]
    times = {FP16_ALLREDUCE: [10, 10, 10, 10], "low": [5, 9, 11, 12], "high": [20, 12, 9, 9.95],
             "both": [5, 11, 5, 5], "never": [10, 10, 10.5, np.inf], "always": [1, 1, 1, 1]}
    frame = pd.DataFrame([{"method": m, "seed": s, "schedule": "overlap", "bandwidth": b, "seconds": t}
                          for m, ts in times.items() for s in (0, 1) for b, t in zip(grid, ts)])
    got = paying_intervals(frame)["overlap, modelled only"].to_dict()  # nothing checked: all of it modelled
    assert got == {"low": "10-100 MB/s", "high": "1,000 MB/s", "both": "10 MB/s; 1,000-10,000 MB/s",
                   "never": "nowhere in 10-10,000 MB/s", "always": "all of 10-10,000 MB/s"}
    assert set(paying_intervals(frame)["overlap, checked"]) == {""}
    split = paying_intervals(frame, validated=2e8)  # checked up to 200 MB/s: 10 and 100 MB/s
    assert split.loc["both", "overlap, checked"] == "10 MB/s" and split.loc["both", "overlap, modelled only"] == \
        "all of 1,000-10,000 MB/s"
    assert split.loc["high", "overlap, checked"] == "nowhere in 10-100 MB/s"
    assert split.loc["low", "overlap, modelled only"] == "nowhere in 1,000-10,000 MB/s"
    when = pd.DataFrame({"fastest (overlap)": {"10 MB/s": "a", "10 Gb/s": "b"},
                         "ties (overlap)": {"10 MB/s": "", "10 Gb/s": "c, d"}})
    assert fastest_at(when, "10 MB/s") == "a" and fastest_at(when, "10 Gb/s") == "b (tie: c, d)"


def test_a_method_is_fastest_only_where_its_interval_clears_the_others():
    import pandas as pd
    from thinwire.papers.compare import ties, which_when
    means = pd.Series({"a": 10.0, "b": 10.4, "c": 12.0, "d": 14.0, "e": np.inf})
    ses = pd.Series({"a": 0.5, "b": 0.1, "c": 1.6, "d": 0.5, "e": 0.0})
    # b: within 5%; c: 12.0 - 1.6 reaches 10.5; d: 13.5 does not; e never reaches the target
    assert ties(means, ses) == ("a", ["b", "c"])
    assert ties(pd.Series({"a": np.inf}), pd.Series({"a": 0.0})) == ("none reaches the target", [])
    rows = [{"method": m, "seed": s, "schedule": sch, "bandwidth": 1e7, "seconds": t}
            for m, ts in {FP16_ALLREDUCE: (20, 22, 24), "x": (8, 10, 12), "y": (10, 11.5, 13), "z": (15, 15, 15)}.items()
            for s, t in enumerate(ts) for sch in ("sequential", "overlap")]
    when = which_when(pd.DataFrame(rows), marks={"10 MB/s": 1e7}, validated=5e7)
    # x: 10 +- 1.15; y: 11.5 - 0.87 reaches 11.15: a tie; z: 15 does not
    assert when.loc["10 MB/s", "fastest (overlap)"] == "x" and when.loc["10 MB/s", "ties (overlap)"] == "y"
    assert when.loc["10 MB/s", f"speed-up over {FP16_ALLREDUCE} (overlap)"] == pytest.approx(22 / 10)
    assert when.loc["10 MB/s", "range"] == "checked"
    assert which_when(pd.DataFrame(rows), marks={"10 MB/s": 1e7}).loc["10 MB/s", "range"] == "modelled only"


def test_the_map_prices_measured_steps_to_target_at_any_compute_time():
    from thinwire.papers.compare import map_fastest, near_best_target, time_map
    import pandas as pd
    times = StepTimes(_Fake(), warmup=1)
    costs = FixedCosts(latency_s=0.5, message_latency_s=0.25, wire_overhead=0.0)
    frame = time_map({("m", 0): times}, 0.8, costs, grid=[1000.0], computes=(0.1, 10.0), schedule="sequential")
    # 4 steps to 0.8 (step 3 evaluates it); gradient 0.1 s a step, codec 3 s on the talking step, comm 1.75 s there
    assert frame.set_index("compute").loc[0.1, "seconds"] == pytest.approx(4 * 0.1 + 3.0 + 1.75)
    assert frame.set_index("compute").loc[10.0, "seconds"] == pytest.approx(4 * 10.0 + 3.0 + 1.75)
    overlap = time_map({("m", 0): times}, 0.8, costs, grid=[1000.0], computes=(10.0,))
    assert overlap["seconds"].iloc[0] == pytest.approx(4 * 10.0 + 3.0)  # 1.75 s hides under 6.7 s of backward
    rows = pd.DataFrame([{"method": m, "seed": s, "compute": c, "bandwidth": 1e7, "seconds": t * c}
                         for m, t in {FP16_ALLREDUCE: 2.0, "x": 1.0}.items() for s in (0, 1) for c in (1.0, 2.0)])
    best = map_fastest(rows)
    assert best.loc[(1.0, 1e7), "fastest"] == "x" and best.loc[(2.0, 1e7), "speed-up"] == pytest.approx(2.0)
    accuracy = pd.DataFrame({"method": ["a", "a", "b"], "final accuracy": [0.9, 0.8, 0.95]})
    assert near_best_target(accuracy) == pytest.approx(0.995 * 0.95)


def test_the_headline_prices_a_cited_latency_and_the_fit_is_a_variant():
    from thinwire.comm import PRESETS
    from thinwire.papers.compare import cited
    tcp, ib = cited("ethernet_10g_tcp"), cited("infiniband_edr_mpi")
    assert (tcp.latency_s, tcp.message_latency_s) == (20e-6, 20e-6) and "(cited)" in tcp.source
    assert ib.message_latency_s == PRESETS["infiniband_edr_mpi"].message_latency_s == 1e-6
    assert tcp.link(1e9).message_latency_s == 20e-6 and tcp.link(1e9).node_messages


def test_a_committed_network_check_is_quoted_back_only_at_its_number_of_workers(tmp_path):
    import json

    from thinwire.netcheck import validated_max
    from thinwire.papers.compare import quoted_netcheck, report_scrap
    from thinwire.scraps import MIME
    rows = [{"topology": t, "rate_bytes_per_s": rate, "delay_s": 0.0, "error_pct": error, "phases": [{"x": 1}]}
            for t, rate, error in (("star", 10e6, 3.0), ("ring_allreduce", 50e6, -12.0), ("star", 200e6, 25.0))]
    report = {"latency_s": 0.0, "message_latency_s": 2e-3, "calibration": {"star": object()}, "rows": rows}
    scrap = report_scrap(report, workers=4)
    assert "calibration" not in scrap and all("phases" not in r for r in scrap["rows"]) and scrap["workers"] == 4
    cell = {"cell_type": "code", "execution_count": 1, "source": "", "metadata": {},
            "outputs": [{"output_type": "display_data", "metadata": {},
                         "data": {MIME: {"name": "netcheck_report", "value": scrap}}}]}
    path = tmp_path / "check.ipynb"
    path.write_text(json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    quoted = quoted_netcheck(path, workers=4)
    assert quoted["message_latency_s"] == 2e-3 and validated_max(quoted) == 50e6
    assert quoted_netcheck(path, workers=3) is None  # checked with other rank counts: not this comparison's
    assert quoted_netcheck(tmp_path / "missing.ipynb", workers=4) is None
