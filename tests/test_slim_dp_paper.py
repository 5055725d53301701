"""The Slim-DP paper package: run builders and the analysis behind the notebook's tables,
on small real runs."""

import pytest
from pandas import isna as pd_isna

from thinwire.experiment import run
from thinwire.papers import slim_dp as sd
from thinwire.experiment import measures

TINY = dict(model="mlp(hidden=(32,))", steps=12, train_samples=1024, eval_every=3, eval_samples=300)
SLIM = sd.slim_label(*sd.HEADLINE)


def test_runs_share_configs_and_cover_every_figure():
    runs = sd.slim_dp_runs(profile="smoke", seed=5)
    assert runs.seeds == (5, 6, 7)
    # every method at K = 4, Table 1's at K = 8
    assert len(runs.headline) == len(runs.seeds) * (len(sd.METHODS) + len(sd.TABLE1))
    assert runs.methods(4) == sd.METHODS and runs.methods(8) == sd.TABLE1 and sd.slim_label(0.5, 0.25) not in sd.TABLE1
    first = runs.headline[(4, SLIM, 5)]
    assert runs.epsilon[0.15].key() == first.key() and runs.refresh[10].key() == first.key()
    assert [c.section.epsilon for c in runs.epsilon.values()] == list(sd.EPSILONS)
    quant = runs.headline[(8, sd.QUANT, 6)]
    assert quant.push_codec == quant.pull_codec == "qsgd(bits=8, bucket=512, norm='l2')"
    assert quant.pull_mode == "delta" and quant.workers == 8
    [(slim, plump)] = runs.ablation["sum at the center; Plump-DP at lr x K"]
    assert slim.section.server_scale == "sum" and plump.lr == pytest.approx(0.4)
    longer = runs.ablation[f"{sd.LONGER}x the rounds"]
    assert [(s.seed, p.seed) for s, p in longer] == [(5, 5), (6, 6), (7, 7)][:sd.LENGTH_SEEDS]
    assert all(s.steps == p.steps == sd.LONGER * first.steps for s, p in longer)
    assert runs.gloo.steps <= first.steps and runs.gloo.workers == 4
    elias = runs.elias[8]
    assert elias.push_codec == elias.pull_codec == "qsgd(bits=8, bucket=512, norm='l2', coding='elias')"
    assert elias.replace(push_codec=quant.push_codec, pull_codec=quant.pull_codec, steps=quant.steps,
                         eval_every=quant.eval_every, seed=6).key() == quant.key()
    assert elias.steps == 10 and runs.in_process()["elias"] is runs.elias and runs.scale_sizes == ()
    capped = sd.slim_dp_runs(profile="default", steps=7)
    assert all(c.steps == 7 for c in capped.headline.values())
    # the default profile runs the headline and Fig. 4; the studies only when asked
    assert not capped.studies and not (capped.epsilon or capped.refresh or capped.ablation or capped.elias
                                       or capped.scale_sizes)
    asked = sd.slim_dp_runs(profile="default", studies=True)
    assert asked.studies and asked.epsilon and asked.refresh and asked.ablation and asked.elias
    assert 13_000_000 in asked.scale_sizes
    assert runs.studies and runs.refresh and runs.ablation  # smoke runs them all
    longest = sd.slim_dp_runs(profile="smoke", seed=5, length=16, length_seeds=3).ablation["16x the rounds"]
    assert [(s.seed, p.seed) for s, p in longest] == [(5, 5), (6, 6), (7, 7)]
    assert all(s.steps == p.steps == 16 * first.steps for s, p in longest)
    for bad, match in ((dict(quant_bits=1), "quant_bits"), (dict(refresh=0), "refresh"), (dict(length=1), "length"),
                       (dict(length_seeds=4), "length_seeds"),
                       (dict(selection="fast"), "selection"), (dict(scope="row"), "scope"),
                       (dict(studies="yes"), "studies")):
        with pytest.raises(ValueError, match=match):
            sd.slim_dp_runs(profile="smoke", **bad)
    with pytest.raises(ValueError, match="profile"):
        sd.slim_dp_runs(profile="huge")


@pytest.fixture(scope="module")
def done(tmp_path_factory):
    root = tmp_path_factory.mktemp("slim")
    runs = sd.slim_dp_runs(profile="smoke")
    tiny = lambda c: run(c.replace(**{**TINY, "steps": c.steps // 40 * TINY["steps"]}), root=root)  # noqa: E731
    headline = {key: tiny(c) for key, c in runs.headline.items() if key[0] == 4 and key[2] == 0}
    return {"headline": headline,
            "epsilon": {e: tiny(c) for e, c in runs.epsilon.items() if e in (0.0, 0.15)},
            "refresh": {q: tiny(c) for q, c in runs.refresh.items()},
            "ablation": {key: tiny(c) for key, c in runs.in_process()["ablation"].items()},
            "elias": {4: run(runs.elias[4].replace(**{**TINY, "steps": 6, "eval_every": 6}), root=root)}}


def test_saved_bytes_follow_the_wire_formula(done):
    plump = done["headline"][(4, sd.PLUMP, 0)]
    # a byte per value and a float32 norm per 512 values, against 4 bytes per value
    assert sd.saved_bytes(done["headline"][(4, sd.QUANT, 0)], plump) == pytest.approx(0.75 - 1 / 512, abs=3e-3)
    refresh = sd.refresh_table(done["refresh"], plump)
    # 12 rounds: the core's keys go out at rounds 0 (every q), so q = 10 refreshes twice and q = 50 once
    for q, refreshes in ((1, 12), (10, 2), (50, 1)):
        words = sd.HEADLINE[0] + sd.HEADLINE[1] + (sd.HEADLINE[0] - sd.HEADLINE[1]) * refreshes / 12
        assert refresh.loc[q, "saved bytes"] == pytest.approx(1 - words, abs=2e-3)
    assert refresh.loc[10, "formula, refresh counted"] == pytest.approx(1 - sd.refresh_words(0.3, 0.15, 10))
    assert refresh.loc[1, "formula, paper (no refresh)"] == pytest.approx(0.55)


def test_saved_time_counts_transfer_and_codec(done):
    plump, quant = done["headline"][(4, sd.PLUMP, 0)], done["headline"][(4, sd.QUANT, 0)]
    net = "ethernet_10g"
    assert measures.priced_seconds(plump, net) == pytest.approx(plump.summary["comm_seconds"])
    assert measures.codec_seconds(quant) > 0
    assert sd.communication_time(quant, net) == pytest.approx(measures.priced_seconds(quant, net) + measures.codec_seconds(quant))
    bytes_only = sd.saved_time(quant, plump, net, codec=False)
    assert bytes_only == pytest.approx(1 - measures.priced_seconds(quant, net) / measures.priced_seconds(plump, net))
    # a slower network makes the same codec time matter less
    assert sd.saved_time(quant, plump, "net_10mbs") > sd.saved_time(quant, plump, net)


def test_tables_and_paper_vs_ours(done):
    headline = done["headline"]
    table = sd.table1(headline, (4,), (0,), sd.METHODS, ("ethernet_10g", "infiniband_56g"))
    assert table.loc[(4, sd.PLUMP), "saved bytes"] == 0 and table.loc[(4, sd.PLUMP), "gap to Plump-DP"] == 0
    assert table.loc[(4, SLIM), "accuracy"] == pytest.approx(sd.final_accuracy(headline[(4, SLIM, 0)]))
    speed = sd.speed_table(headline, (4,), (0,), sd.METHODS, ("ethernet_10g",))
    assert speed.loc[(4, sd.PLUMP), "ethernet_10g"] == 1.0
    order = sd.ordering(table, "ethernet_10g")[4]
    assert order["Slim-DP ahead"][SLIM] == (order[SLIM] > order["Quant-DP"])
    # the paper's accounting leaves Slim-DP's index generation (the select part) out; Quant-DP selects nothing
    slim, quant = headline[(4, SLIM, 0)], headline[(4, sd.QUANT, 0)]
    index = measures.codec_seconds(slim, part="select")
    assert index > 0 and measures.codec_seconds(quant, part="select") == 0
    assert sd.codec_time(slim, "paper") == pytest.approx(measures.codec_seconds(slim) - index)
    assert sd.codec_time(quant, "paper") == sd.codec_time(quant, "ours")
    assert table.loc[(4, SLIM), "saved time ethernet_10g, paper's accounting"] > table.loc[(4, SLIM), "saved time ethernet_10g"]
    assert table.loc[(4, sd.QUANT), "saved time ethernet_10g, paper's accounting"] == pytest.approx(
        table.loc[(4, sd.QUANT), "saved time ethernet_10g"])
    assert table.loc[(4, SLIM), "index generation ms/round"] == pytest.approx(1e3 * index / slim.config.steps)
    paper_order = sd.ordering(table, "infiniband_56g", accounting="paper")[4]
    assert paper_order[SLIM] == table.loc[(4, SLIM), "saved time infiniband_56g, paper's accounting"]
    both = sd.ordering_table(table, ("infiniband_56g",))
    assert both.loc[("paper", "infiniband_56g", 4, SLIM), "Slim-DP saved time"] == paper_order[SLIM]
    assert set(both.index.get_level_values("accounting")) == {"ours", "paper"}
    assert set(both["ahead"]) <= {"Slim-DP", "Quant-DP"}
    with pytest.raises(ValueError, match="accounting='caffe' is not allowed"):
        sd.codec_time(slim, "caffe")
    plump = headline[(4, sd.PLUMP, 0)]
    epsilon = sd.sweep_table(done["epsilon"], plump, "epsilon")
    assert list(epsilon.index) == [0.0, 0.15] and epsilon.loc[0.15, "saved bytes"] == pytest.approx(
        sd.saved_bytes(headline[(4, SLIM, 0)], plump))
    ablation = sd.ablation_table(done["ablation"])
    assert ablation.loc["as run", "gap"] == pytest.approx(table.loc[(4, SLIM), "gap to Plump-DP"])
    assert ablation.loc[f"{sd.LONGER}x the rounds", "rounds"] == sd.LONGER * TINY["steps"]
    refresh = sd.refresh_table(done["refresh"], plump)
    even = {4: sd.break_even_codec_ms(headline, 4, (0,), sd.slim_label(0.2, 0.1), "ethernet_10g")}
    comparison = sd.paper_vs_ours(table, refresh, ablation, epsilon, sd.PUBLISHED, "ethernet_10g", 10, even, None,
                                  TINY["steps"])
    row = comparison.loc[f"saved comm. time, {SLIM} (GoogLeNet's setting), K = 4"]
    assert row["paper"] == sd.PUBLISHED["saved_time"][("GoogLeNet", "Slim-DP", 4)]
    assert row["ours"] == pytest.approx(table.loc[(4, SLIM), "saved time ethernet_10g"])
    assert comparison.loc[f"words per round / N, {SLIM}", "paper"] == pytest.approx(0.45)
    assert all(isinstance(w, str) and w for w in comparison["why"])
    # each cause says how many seeds measured it: the standard error from three, else "indicative"
    longer = ablation.loc[f"{sd.LONGER}x the rounds"]
    assert longer["seeds"] == sd.LENGTH_SEEDS and not pd_isna(longer["gap se"]) and pd_isna(ablation.loc["as run", "gap se"])
    gap_why = comparison.loc[f"accuracy, {SLIM} minus Plump-DP (points), K = 4", "why"]
    assert f"as run: {100 * ablation.loc['as run', 'gap']:+.2f} (one seed, indicative)" in gap_why
    assert f"(se {100 * longer['gap se']:.2f}, 3 seeds)" in gap_why
    assert "one seed, indicative" in comparison.loc["epsilon = 0: accuracy minus Plump-DP (points)", "why"]
    # studies that neither ran nor were quoted leave their part out, and say so
    bare = sd.paper_vs_ours(table, None, None, epsilon, sd.PUBLISHED, "ethernet_10g", 10, even, None, TINY["steps"])
    assert "gap ablation did not run" in bare.loc[f"accuracy, {SLIM} minus Plump-DP (points), K = 4", "why"]
    assert bare.loc[f"words per round / N, {SLIM}", "ours"] == pytest.approx(1 - table.loc[(4, SLIM), "saved bytes"])
    assert pd_isna(comparison.loc["epsilon = alpha = 0.3: accuracy minus Plump-DP (points)", "ours"])  # not in the tiny sweep
    full = sd.sweep_table({**done["epsilon"], 0.3: done["epsilon"][0.15]}, plump, "epsilon")
    again = sd.paper_vs_ours(table, refresh, ablation, full, sd.PUBLISHED, "ethernet_10g", 10, even, None, TINY["steps"])
    assert again.loc["epsilon = alpha = 0.3: accuracy minus Plump-DP (points)", "ours"] == pytest.approx(
        100 * full.loc[0.3, "gap to Plump-DP"])
    vgg = sd.slim_label(0.2, 0.1)
    assert comparison.loc[f"saved comm. time, {vgg} minus Quant-DP, K = 4", "ours"] == pytest.approx(
        table.loc[(4, vgg), "saved time ethernet_10g"] - table.loc[(4, sd.QUANT), "saved time ethernet_10g"])
    # at the break-even codec time Quant-DP's saved time equals Slim-DP's
    plump, quant = headline[(4, sd.PLUMP, 0)], headline[(4, sd.QUANT, 0)]
    at_even = 1 - (measures.priced_seconds(quant, "ethernet_10g") + even[4] / 1e3 * quant.config.steps) / sd.communication_time(
        plump, "ethernet_10g")
    assert at_even == pytest.approx(table.loc[(4, vgg), "saved time ethernet_10g"])


def test_elias_table_counts_the_same_rounds(done):
    """Quant-DP's first rounds in QSGD's own coding: the same training, its bytes beside the
    fixed-width run's over the same rounds."""
    headline = done["headline"]
    table = sd.elias_table(done["elias"], headline, 0)
    row = table.loc[4]
    fixed, coded, plump = headline[(4, sd.QUANT, 0)], done["elias"][4], headline[(4, sd.PLUMP, 0)]
    assert row["rounds"] == 6 and row["same losses"]
    first = lambda r: measures.payload(r) - measures.payload(r, start=6)  # noqa: E731
    assert row["payload/round Elias"] == pytest.approx(measures.payload(coded) / 6)
    assert row["payload/round fixed-width"] == pytest.approx(first(fixed) / 6)
    assert row["saved bytes Elias"] == pytest.approx(1 - measures.payload(coded) / first(plump))
    assert row["Elias / fixed-width"] < 1  # a 32-wide layer's buckets hold small levels


def test_scale_measures_codec_work_and_prices_a_round():
    """Codec work alone at a size, priced per round as the runs count it."""
    from thinwire.comm import PRESETS
    from thinwire.papers.slim_dp import scale
    work = sd.codec_work(20_000, ((0.2, 0.1),), refresh=2, cycles=1, repeats=2)
    slim = work[sd.slim_label(0.2, 0.1)]
    assert set(work) == {sd.PLUMP, sd.QUANT, sd.slim_label(0.2, 0.1)}
    assert slim["select"] > 0 and work[sd.QUANT]["select"] == 0
    # a refresh cycle of 2 rounds: one message carries the core's keys, one does not
    core, explorer = 2000, 2000
    assert slim["bytes"] == pytest.approx(4 * (core + 2 * explorer) + 4 * core / 2, rel=0.01)
    assert work[sd.QUANT]["bytes"] / work[sd.PLUMP]["bytes"] == pytest.approx(0.25 + 1 / 512, abs=2e-3)
    link = PRESETS["ethernet_10g"]
    seconds = scale.round_seconds(slim, 4, "ethernet_10g")
    assert seconds["transfer"] == pytest.approx(2 * (link.latency_s + 4 * slim["bytes"] / link.bandwidth_bytes_per_s))
    assert seconds["codec"] == pytest.approx(2 * slim["select"] + 2 * slim["encode"] + 5 * slim["decode"])
    assert scale.round_seconds(slim, 4, "ethernet_10g", "paper")["codec"] == pytest.approx(
        seconds["codec"] - 2 * slim["select"])
    table = sd.scale_table({(sd.size_label(20_000, 20_000), 20_000): work}, (4,), ("ethernet_10g",))
    row = table.loc[("0.02M, the runs' model", sd.slim_label(0.2, 0.1))]
    assert row["saved K=4 ethernet_10g"] == pytest.approx(scale.saved_time(slim, work[sd.PLUMP], 4, "ethernet_10g"))
    assert row["saved K=4 ethernet_10g, paper's accounting"] > row["saved K=4 ethernet_10g"]
    order = sd.scale_ordering(table)
    best = table["saved K=4 ethernet_10g"].astype(float).idxmax()[1]
    assert order.loc["0.02M, the runs' model", "saved K=4 ethernet_10g"] == best
    assert sd.size_label(13_000_000) == "13M, GoogLeNet's" and sd.size_label(12345) == "12,345"
    with pytest.raises(ValueError, match="accounting='gpu' is not allowed"):
        scale.round_seconds(slim, 4, "ethernet_10g", "gpu")
