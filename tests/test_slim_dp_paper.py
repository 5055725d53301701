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
    assert len(runs.headline) == len(sd.WORKERS) * len(runs.seeds) * len(sd.METHODS)
    first = runs.headline[(4, SLIM, 5)]
    assert runs.epsilon[0.15].key() == first.key() and runs.refresh[10].key() == first.key()
    assert [c.section.epsilon for c in runs.epsilon.values()] == list(sd.EPSILONS)
    quant = runs.headline[(8, sd.QUANT, 6)]
    assert quant.push_codec == quant.pull_codec == "qsgd(bits=8, bucket=512, norm='l2')"
    assert quant.pull_mode == "delta" and quant.workers == 8
    [(slim, plump)] = runs.ablation["sum at the center; Plump-DP at lr x K"]
    assert slim.section.server_scale == "sum" and plump.lr == pytest.approx(0.4)
    [(slim, plump)] = runs.ablation[f"{sd.LONGER}x the rounds"]
    assert slim.steps == plump.steps == sd.LONGER * first.steps
    assert runs.gloo.steps <= first.steps and runs.gloo.workers == 4
    capped = sd.slim_dp_runs(profile="default", steps=7)
    assert all(c.steps == 7 for c in capped.headline.values())
    longest = sd.slim_dp_runs(profile="smoke", seed=5, length=16, length_seeds=3).ablation["16x the rounds"]
    assert [(s.seed, p.seed) for s, p in longest] == [(5, 5), (6, 6), (7, 7)]
    assert all(s.steps == p.steps == 16 * first.steps for s, p in longest)
    for bad, match in ((dict(quant_bits=1), "quant_bits"), (dict(refresh=0), "refresh"), (dict(length=1), "length"),
                       (dict(length_seeds=4), "length_seeds"),
                       (dict(selection="fast"), "selection"), (dict(scope="row"), "scope")):
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
            "ablation": {key: tiny(c) for key, c in runs.in_process()["ablation"].items()}}


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
    comparison = sd.paper_vs_ours(table, refresh, ablation, epsilon, sd.PUBLISHED, "ethernet_10g", 10, even)
    row = comparison.loc[f"saved comm. time, {SLIM} (GoogLeNet's setting), K = 4"]
    assert row["paper"] == sd.PUBLISHED["saved_time"][("GoogLeNet", "Slim-DP", 4)]
    assert row["ours"] == pytest.approx(table.loc[(4, SLIM), "saved time ethernet_10g"])
    assert comparison.loc[f"words per round / N, {SLIM}", "paper"] == pytest.approx(0.45)
    assert all(isinstance(w, str) and w for w in comparison["why"])
    assert pd_isna(comparison.loc["epsilon = alpha = 0.3: accuracy minus Plump-DP (points)", "ours"])  # not in the tiny sweep
    full = sd.sweep_table({**done["epsilon"], 0.3: done["epsilon"][0.15]}, plump, "epsilon")
    again = sd.paper_vs_ours(table, refresh, ablation, full, sd.PUBLISHED, "ethernet_10g", 10, even)
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
