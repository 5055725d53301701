"""The papers' analysis helpers on small real runs: the notebooks' tables come from here."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from thinwire.experiment import run
from thinwire.papers import gradient_dropping as gd
from thinwire.experiment import measures

TINY = dict(steps=12, train_samples=1024, eval_every=3, eval_samples=300)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("gd")
    built = gd.gradient_dropping_runs(profile="smoke", network="pcie3_x16")
    narrow = lambda c: c.model_spec.replace(hidden=(32, 32, 32))  # noqa: E731  (the run's own layer norm)
    pick = lambda c, **more: run(c.replace(model=narrow(c), **{**TINY, **more}), root=root)  # noqa: E731
    return {
        "ratios": {r: pick(built.ratios[r]) for r in (0.0, 0.99)},
        "index_value": {r: pick(c) for r, c in built.index_value.items()},
        "diagnosis": {k: pick(c) for k, c in built.diagnosis.items() if k[0] == "adagrad"},
        "marian": {k: pick(c) for k, c in built.marian.items()},
        "longer": {k: pick(c, steps=2 * TINY["steps"]) for k, c in built.longer.items()},
        "seed_runs": {k: pick(c, **({"warmup_steps": 1} if k[0] == "99%" else {})) for k, c in built.seed_runs.items()},
        "warmup": built.warmup_steps,
    }


def test_settings_put_the_figures_in_marians_setting():
    """``marian`` (default): async, eps 1e-8, and a warm-up on dropping runs only (the dense
    run is then the Marian table's, one cached run); ``sync`` keeps the ablation's configs;
    the diagnosis stays synchronous in both; speed runs drop from their first step."""
    args = dict(profile="smoke", network="pcie3_x16")
    marian, sync = gd.gradient_dropping_runs(**args), gd.gradient_dropping_runs(**args, setting="sync")
    assert marian.ratios[0.99].section.schedule == "async" and marian.ratios[0.99].section.adagrad_eps == gd.MARIAN_EPS
    assert marian.ratios[0.99].section.warmup_steps == marian.warmup_steps == 5
    assert marian.ratios[0.0].section.warmup_steps == 0
    assert marian.ratios[0.0].key() == marian.marian[("async", "no dropping")].key()
    assert marian.ratios[0.99].key() == marian.marian[("async", "99%, all three (Marian)")].key()
    assert all(c.section.warmup_steps == 0 for c in marian.speed.values())
    assert marian.speed[0.99].section.schedule == "async"
    assert sync.ratios[0.99].key() == sync.marian[("sync", "99%")].key() and sync.warmup_steps == 0
    assert {c.key() for c in marian.diagnosis.values()} == {c.key() for c in sync.diagnosis.values()}
    assert all(c.section.schedule == "sync" for c in marian.diagnosis.values())
    assert marian.longer["99%"].steps == 2 * marian.ratios[0.99].steps
    with pytest.raises(ValueError, match="setting='asynchronous' is not allowed"):
        gd.gradient_dropping_runs(**args, setting="asynchronous")
    for workers in (1, 0, 2.0):  # one node sends nothing over a network: refused, not a division by zero later
        with pytest.raises(ValueError, match=rf"workers={workers!r} is not allowed: workers must be an int >= 2"):
            gd.gradient_dropping_runs(**{**args, "workers": workers})


def test_gaps_and_diagnosis_tables(runs):
    dense = runs["ratios"][0.0]
    gaps = gd.accuracy_gaps(dense, runs["ratios"])
    assert list(gaps.columns) == ["99.0%"] and list(gaps.index) == [3, 6, 9, 12]
    drop = runs["ratios"][0.99]
    assert gaps["99.0%"].iloc[-1] == pytest.approx(dense.summary["final_accuracy"] - drop.summary["final_accuracy"])
    table = gd.diagnosis_table(runs["diagnosis"])
    assert table.loc[("adagrad", "no dropping"), "gap to no dropping (last 3)"] == 0
    assert 0 < table.loc[("adagrad", "99% pushes and pulls"), "pull density"] < 0.05
    assert table.loc[("adagrad", "99% pushes, dense pulls"), "pull density"] != table.loc[("adagrad", "99% pushes, dense pulls"), "pull density"]  # NaN: dense pulls report no density


def test_marian_settings_table(runs):
    """Each of Marian's settings against the dense run of its own schedule; warm-up steps
    send every value, so the payload after warm-up is what dropping sends."""
    table = gd.marian_table(runs["marian"])
    assert list(table.index) == list(runs["marian"])
    assert table.loc[("sync", "no dropping"), "gap to no dropping (last 3)"] == 0
    assert table.loc[("async", "no dropping"), "gap to no dropping (last 3)"] == 0
    both = table.loc[("async", "99%, all three (Marian)")]
    assert both["AdaGrad eps"] == f"{gd.MARIAN_EPS:g}" and both["dense warm-up steps"] == 5
    assert both["payload/step after warm-up"] < both["payload/step"] / 3
    drop = runs["marian"][("async", "99%, all three (Marian)")]
    assert drop.metrics["payload_bytes"][:5] == runs["marian"][("async", "no dropping")].metrics["payload_bytes"][:5]
    assert 0 < both["pull density"] < 0.05


def test_bytes_and_speed_after_the_warm_up(runs):
    """Warm-up steps send float32: payload counts from a step on, the whole run by default."""
    dense, drop, w = runs["ratios"][0.0], runs["ratios"][0.99], runs["warmup"]
    m = drop.metrics
    assert measures.payload(drop, start=w) == sum(m["push_payload"][w:]) + sum(m["pull_payload"][w:])
    assert measures.payload(drop) == drop.summary["push_payload"] + drop.summary["pull_payload"]
    assert gd.data_reduction(dense, drop, w) > 3 * gd.data_reduction(dense, drop)
    assert 0 < measures.communication_share(drop, "pcie3_x16", w) < 1
    assert measures.images_per_second(dense, "pcie3_x16", w) > 0


def test_length_table(runs):
    table = gd.length_table(runs["longer"], {"no dropping": runs["ratios"][0.0], "99%": runs["ratios"][0.99]})
    assert list(table.index) == ["profile length", "twice as long"]
    assert table.loc["twice as long", "steps"] == 2 * table.loc["profile length", "steps"]
    long = runs["longer"]
    assert table.loc["twice as long", "gap (last 3)"] == pytest.approx(
        measures.final_accuracy(long["no dropping"], gd.LAST) - measures.final_accuracy(long["99%"], gd.LAST))


def test_paper_vs_ours_puts_the_published_numbers_beside_ours(runs):
    dense, drop, index, w = runs["ratios"][0.0], runs["ratios"][0.99], runs["index_value"][0.99], runs["warmup"]
    gaps = gd.accuracy_gaps(dense, runs["ratios"])
    diagnosis, marian = gd.diagnosis_table(runs["diagnosis"]), gd.marian_table(runs["marian"])
    length = gd.length_table(runs["longer"], {"no dropping": dense, "99%": drop})
    seeds = gd.seeds_table(runs["seed_runs"])
    table = gd.paper_vs_ours(dense, drop, index, gaps, "pcie3_x16", gd.PUBLISHED, diagnosis, marian, length,
                             "marian", w, seeds)
    assert table.loc["accuracy baseline", "paper"] == gd.PUBLISHED["accuracy_baseline"]
    assert table.loc["data reduction 99% (offset-value)", "ours"] == pytest.approx(gd.data_reduction(dense, drop, w))
    assert table.loc["data reduction 99% (index-value, 8 bytes per survivor)", "ours"] == pytest.approx(
        gd.data_reduction(dense, index, w))
    assert (table["gap (ours - paper)"] == table["ours"] - table["paper"]).all()
    assert all(isinstance(w, str) and w for w in table["why"])
    why = table.loc["accuracy 99% drop", "why"]
    assert f"{diagnosis.loc[('adagrad', '99% pushes and pulls'), 'pull density']:.2%}" in why
    assert f"{length.loc['twice as long', 'gap (last 3)']:+.4f}" in why and why.startswith("marian setting")
    row = table.loc["accuracy 99% drop, synchronous"]
    assert row["ours"] == marian.loc[("sync", "99%"), "final accuracy"]
    other = gd.paper_vs_ours(dense, drop, index, gaps, "pcie3_x16", gd.PUBLISHED, diagnosis, marian, length, "sync", w,
                             seeds)
    assert other.loc["accuracy 99% drop, Marian's setting", "ours"] == marian.loc[
        ("async", "99%, all three (Marian)"), "final accuracy"]
    row = table.loc["accuracy gap no dropping - 99%, over seeds"]
    assert row["paper"] == pytest.approx(gd.PUBLISHED["accuracy_baseline"] - gd.PUBLISHED["accuracy_drop99"])
    assert row["ours"] == seeds.loc["mean", "gap (last 3)"] and "mean of 2 seeds" in row["why"]
    assert "4096 in the paper): not run" in table.loc["accuracy baseline", "why"]
    wide = gd.width_table({"hidden 32": dense, "hidden 64": dense})
    with_width = gd.paper_vs_ours(dense, drop, index, gaps, "pcie3_x16", gd.PUBLISHED, diagnosis, marian, length,
                                  "marian", w, seeds, wide)
    why = with_width.loc["accuracy baseline", "why"]
    assert "is not the cause: the wider network is no better here" in why and "(same 12 steps and seed)" in why
    assert why.endswith("one seed, indicative)")
    quoted = gd.paper_vs_ours(dense, drop, index, gaps, "pcie3_x16", gd.PUBLISHED, diagnosis, marian, length,
                              "marian", w, seeds, wide, gd.WIDTH_RUN).loc["accuracy baseline", "why"]
    assert quoted.endswith(f"one seed, indicative; from {gd.WIDTH_RUN})")  # a committed run's width table
    assert "(Marian table, one seed, indicative)" in table.loc["accuracy 99% drop", "why"]
    alone = gd.paper_vs_ours(dense, drop, index, gaps, "pcie3_x16", gd.PUBLISHED, None, None, None, "marian", w, seeds)
    assert "accuracy 99% drop, synchronous" not in alone.index  # no study ran or was quoted: its parts are left out
    assert "diagnosis" not in alone.loc["accuracy 99% drop", "why"] and len(alone) == len(table) - 1


def test_the_default_profile_quotes_the_studies_from_the_committed_long_run():
    """The default profile runs the figures, tables and seeds only; the one-seed studies come
    from ``STUDIES_RUN``, and only where nothing but ``ALLOWED`` parameters was set."""
    from thinwire.notebook_parameters import quotes_apply
    from thinwire.paths import source_checkout
    plain, studied = gd.gradient_dropping_runs(profile="default"), gd.gradient_dropping_runs(profile="default", studies=True)
    assert not plain.studies and plain.diagnosis == plain.marian == plain.longer == {}
    assert studied.studies and len(studied.marian) == 7 and set(studied.longer) == {"no dropping", "99%"}
    assert plain.ratios == studied.ratios and gd.gradient_dropping_runs(profile="smoke").studies
    with pytest.raises(ValueError, match="studies='yes' is not allowed"):
        gd.gradient_dropping_runs(profile="default", studies="yes")
    quoted = gd.quoted_studies((source_checkout() or Path.cwd()) / gd.STUDIES_RUN)
    assert set(quoted) == {"diagnosis", "marian", "length"}
    assert quoted["marian"].loc[("async", "99%, all three (Marian)"), "gap to no dropping (last 3)"] < 0.05
    injected = "# Parameters\nprofile = \"default\"\ngloo = False\n"
    assert quotes_apply("default", [injected], gd.ALLOWED) and not quotes_apply("smoke", [], gd.ALLOWED)
    assert not quotes_apply("default", [injected + "setting = \"sync\"\n"], gd.ALLOWED)


def test_seed_runs_keep_the_warm_up_a_small_share():
    """The gap over seeds: dense and 99% on every profile seed, the warm-up the paper
    profile's share of the run (1.3%) unless given; the first seed's dense run is the
    ratio table's (one cached run); the paper's width on request."""
    runs = gd.gradient_dropping_runs(profile="default", seed=4)
    assert sorted(runs.seed_runs) == sorted((label, s) for label in ("no dropping", "99%") for s in (4, 5, 6))
    assert runs.seed_runs[("no dropping", 4)].key() == runs.ratios[0.0].key()
    drop = runs.seed_runs[("99%", 5)]
    assert drop.section.warmup_steps == 6 == round(450 * gd.paper_warmup_share()) and drop.seed == 5
    assert drop.section.warmup_steps / drop.steps <= 0.02 and not runs.width
    long = gd.gradient_dropping_runs(profile="default", seed_steps=7500, paper_width=True)
    assert {c.steps for c in long.seed_runs.values()} == {7500}
    assert long.seed_runs[("99%", 0)].section.warmup_steps == 100 and long.seed_runs[("99%", 0)].eval_every == 750
    assert [c.model_spec.hidden for c in long.width.values()] == [(512,) * 3, (4096,) * 3]
    assert long.width["hidden 512"].key() == long.ratios[0.0].key()
    assert gd.gradient_dropping_runs(profile="smoke", seed_warmup=0).seed_runs[("99%", 0)].section.warmup_steps == 0
    sync = gd.gradient_dropping_runs(profile="smoke", setting="sync")
    assert all(c.section.warmup_steps == 0 for c in sync.seed_runs.values())
    for bad, match in ((dict(seed_steps=-1), "seed_steps=-1"), (dict(seed_warmup=-2), "seed_warmup=-2"),
                       (dict(seed_warmup=30), r"seed_warmup=30 .* 0\.\.29"), (dict(paper_width="yes"), "paper_width")):
        with pytest.raises(ValueError, match=match):
            gd.gradient_dropping_runs(profile="smoke", **bad)


def test_seeds_table_means_and_spread(runs):
    seeds = gd.seeds_table(runs["seed_runs"])
    assert list(seeds.index) == ["seed 0", "seed 1", "mean", "sd"]
    per_seed = seeds.loc[["seed 0", "seed 1"], "gap (last 3)"]
    first = runs["seed_runs"][("no dropping", 0)], runs["seed_runs"][("99%", 0)]
    assert per_seed.iloc[0] == pytest.approx(measures.final_accuracy(first[0], gd.LAST)
                                             - measures.final_accuracy(first[1], gd.LAST))
    assert seeds.loc["mean", "gap (last 3)"] == pytest.approx(per_seed.mean())
    assert seeds.loc["sd", "gap (last 3)"] == pytest.approx(per_seed.std(ddof=1))
    assert seeds.loc["seed 1", "warm-up share"] == pytest.approx(1 / 12)


def test_oland_raj_tables_from_smoke_runs(tmp_path):
    from thinwire.papers import oland_raj as orr
    runs = orr.oland_raj_runs(profile="smoke")
    shrink = dict(train_samples=500, steps=10, eval_every=5, eval_samples=200)
    headline = {k: run(c.replace(**shrink), root=tmp_path) for k, c in runs.headline.items()}
    table = orr.paper_vs_ours(headline, [0], orr.PUBLISHED)
    # epochs to peak needs runs that stop climbing: only the longer runs measure it
    assert pd.isna(table.loc["fewer epochs to peak, c=6 M=4", "ours"])
    assert not any(name.startswith("fewer epochs to peak, c=6 M=4: standard error") for name in table.index)
    longer = orr.paper_vs_ours(headline, [0], orr.PUBLISHED, longer=headline)
    assert longer.loc["fewer epochs to peak, c=6 M=4", "ours"] == pytest.approx(
        1 - orr.epochs_to_peak(headline[("c=6, M=4", 0)]) / orr.epochs_to_peak(headline[("baseline", 0)]))
    assert table.loc["bits/param Huffman, c=5 M=4", "paper"] == orr.PUBLISHED["bits_huffman_c5m4"]
    rates = orr.mean_bit_rates(headline, "c=5, M=4", [0])
    assert table.loc["bits/param Huffman, c=5 M=4", "ours"] == pytest.approx(rates["sent"].mean())
    assert rates["sent"].mean() < rates["raw"].mean() < 32
    l1 = orr.l1_ablation({k: run(c.replace(**shrink), root=tmp_path) for k, c in runs.l1.items()})
    assert list(l1.index) == sorted({s for _, s in runs.l1}) and (l1["raw bits"] > 0).all()
    findings = orr.why_it_differs(headline, [0], l1, 1e-5, 1)
    assert len(findings) == 6 and all(isinstance(f, str) for f in findings)
    assert f"{rates['ans'].mean():.3f}" in findings[-1]
    assert (l1["c=6 - c=5"] == l1["Huffman bits c=6"] - l1["Huffman bits"]).all()
    settings = {k: run(c.replace(**shrink), root=tmp_path) for k, c in runs.settings.items()}
    l1_runs = {k: run(c.replace(**shrink), root=tmp_path) for k, c in runs.l1.items()}
    triple = orr.bit_rate_table(settings, l1_runs, orr.PUBLISHED)
    assert list(triple.index)[:2] == ["as above", "4 epochs, L1 scaled"] and "L1 0.001" in triple.index
    assert "L1 1e-05" not in triple.index  # the profile's strength is "as above"
    findings = orr.setting_findings(triple, orr.PUBLISHED, 0.3)
    assert len(findings) == len(triple) + 1 and findings[0].startswith("4 epochs, L1 scaled")
    row = triple.loc["fractional N"]
    assert row["raw bits c=5 (N)"] == pytest.approx(orr.mean_bit_width(settings[("fractional N", "c=5, M=4")]))
    assert row["raw bits c=5 (N)"] % 1 != 0 and row["raw bits c=5 (N)"] < row["packed codes c=5"] + 1e-9
    assert row["c=6 - c=5"] == pytest.approx(row["Huffman bits c=6"] - row["Huffman bits c=5"])
    paper = (orr.PUBLISHED["bits_raw_c5m4"], orr.PUBLISHED["bits_huffman_c5m4"], orr.PUBLISHED["bits_huffman_c6m4"])
    ours = (row["raw bits c=5 (N)"], row["Huffman bits c=5"], row["Huffman bits c=6"])
    assert row["distance to paper"] == pytest.approx(max(abs(o - p) / p for o, p in zip(ours, paper)))
    best = orr.best_match(triple)
    assert triple.loc[best, "distance to paper"] == triple["distance to paper"][
        triple["matches accuracy"].astype(bool)].min() or not triple["matches accuracy"].any()


def test_oland_raj_runs_scale_l1_to_the_paper_shrinkage():
    from thinwire.papers import oland_raj as orr
    runs = orr.oland_raj_runs(profile="default", studies=True)
    long = runs.longer[("c=5, M=4", 0)]
    assert long.steps == 26 * runs.headline[("c=5, M=4", 0)].eval_every
    paper = orr.shrinkage(60000, 100, 5, 20, 0.95)
    assert long.l1 * orr.shrinkage(30000, 26, 5, 20, 0.95) == pytest.approx(1e-5 * paper)
    assert sorted(runs.longer) == [("baseline", 0), ("baseline", 1), ("c=5, M=4", 0), ("c=6, M=4", 0), ("c=6, M=4", 1)]
    assert runs.settings[("fractional N", "c=6, M=4")].push_policy.endswith("rounding='fractional')")
    assert runs.settings[("H in nats", "baseline")].key() == runs.headline[("baseline", 0)].key()
    assert runs.settings[("init uniform(a=0.01)", "c=5, M=4")].init == "uniform(a=0.01)"


def test_spike_family_reproduces_the_increment_argument():
    """A 77% spike gives an increment near 0.23 bits but a Huffman rate far below 3.55; with
    no spike every weight's bin splits and the increment is a whole bit."""
    from thinwire.papers import oland_raj as orr
    family = orr.spike_family(bits=7, shares=(0.0, 0.5, 0.77), n=50_000)
    smooth, spiked = family.loc[("gaussian", 0.0)], family.loc[("gaussian", 0.77)]
    assert smooth["Huffman increment"] == pytest.approx(1.0, abs=0.02)
    assert spiked["Huffman increment"] < 0.3 and spiked["Huffman bits at N=7"] < 2.6
    assert (family["Huffman bits at N=7"] >= family["entropy at N=7"]).all()
    nearest, distance = orr.closest_to_paper(family, 7, 3.55, 0.23)
    assert distance > 0.2


def test_epochs_to_plateau_ignores_noise_on_a_flat_top():
    from types import SimpleNamespace
    from thinwire.papers import oland_raj as orr
    curve = [0.90, 0.95, 0.9700, 0.9705, 0.9702, 0.9708]
    result = SimpleNamespace(metrics={"test_accuracy": [None, *curve]})
    assert orr.epochs_to_peak(result) == 6 and orr.epochs_to_plateau(result) == 3
    assert orr.epochs_to_plateau(result, tolerance=0.0) == 6


def test_epochs_to_peak_saved_has_a_standard_error_over_seeds():
    from types import SimpleNamespace
    from thinwire.papers.oland_raj.analysis import epochs_to_peak_error

    def peaking_at(epoch, length=10):
        return SimpleNamespace(metrics={"test_accuracy": [0.5 + 0.01 * (i == epoch - 1) for i in range(length)]})
    runs = {("baseline", 0): peaking_at(10), ("c=6, M=4", 0): peaking_at(8),   # 0.2 saved
            ("baseline", 1): peaking_at(5), ("c=6, M=4", 1): peaking_at(5),    # 0.0
            ("baseline", 2): peaking_at(4), ("c=6, M=4", 2): peaking_at(5)}    # -0.25
    saved = np.array([0.2, 0.0, -0.25])
    assert epochs_to_peak_error(runs, [0, 1, 2]) == pytest.approx(saved.std(ddof=1) / np.sqrt(3))
    assert epochs_to_peak_error(runs, [0]) is None


def test_oland_raj_long_epochs_override():
    from thinwire.papers import oland_raj as orr
    runs = orr.oland_raj_runs(profile="smoke", long_epochs=7)
    assert runs.longer[("baseline", 0)].steps == 7 * runs.headline[("baseline", 0)].eval_every
    for bad in (-1, 2.5, True):
        with pytest.raises(ValueError, match="long_epochs="):
            orr.oland_raj_runs(profile="smoke", long_epochs=bad)


def test_oland_raj_default_runs_the_headline_and_sweeps_and_quotes_the_studies():
    """The default profile's 20 runs (the table and Figs. 1, 4-5) stay inside the budget; the L1
    ablation, the settings and the longer runs run with ``studies``, the longer runs alone
    with ``long_epochs``/``long_seeds`` (the epochs-to-peak long run)."""
    from thinwire.papers import oland_raj as orr
    plain, studied = orr.oland_raj_runs(profile="default"), orr.oland_raj_runs(profile="default", studies=True)
    assert not plain.studies and plain.l1 == plain.settings == plain.longer == {}
    assert len(plain.all()) == 20 and sum(c.steps for c in plain.all()) == 48_000
    assert plain.headline == studied.headline and plain.fixed == studied.fixed and len(studied.all()) == 45
    long = orr.oland_raj_runs(profile="default", long_epochs=100, long_seeds=5)
    assert long.l1 == long.settings == {} and sorted({s for _, s in long.longer}) == [0, 1, 2, 3, 4]
    assert {c.steps for c in long.longer.values()} == {100 * 300} and len(long.longer) == 11
    for bad in ({"long_seeds": -1}, {"studies": "yes"}):
        with pytest.raises(ValueError, match=f"{next(iter(bad))}="):
            orr.oland_raj_runs(profile="default", **bad)

