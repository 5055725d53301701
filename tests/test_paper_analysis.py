"""The papers' analysis helpers on small real runs: the notebooks' tables come from here."""

import pytest

from thinwire.experiment import run
from thinwire.papers import gradient_dropping as gd

TINY = dict(hidden=(32, 32, 32), steps=12, train_samples=1024, eval_every=3, eval_samples=300)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("gd")
    built = gd.gradient_dropping_runs("smoke", "mnist", 4, True, "random", "pcie3_x16", 0)
    pick = lambda c: run(c.replace(**TINY), root=root)  # noqa: E731
    return {
        "ratios": {r: pick(built.ratios[r]) for r in (0.0, 0.99)},
        "diagnosis": {k: pick(c) for k, c in built.diagnosis.items() if k[0] == "adagrad"},
        "marian": {k: pick(c) for k, c in built.marian.items()},
    }


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


def test_paper_vs_ours_puts_the_published_numbers_beside_ours(runs):
    dense, drop = runs["ratios"][0.0], runs["ratios"][0.99]
    gaps = gd.accuracy_gaps(dense, runs["ratios"])
    table = gd.paper_vs_ours(dense, drop, runs["diagnosis"][("adagrad", "99% pushes, dense pulls")], gaps,
                             "pcie3_x16", gd.PUBLISHED)
    assert table.loc["accuracy baseline", "paper"] == gd.PUBLISHED["accuracy_baseline"]
    assert table.loc["data reduction 99% (offset-value)", "ours"] == pytest.approx(gd.data_reduction(dense, drop))
    assert (table["gap (ours - paper)"] == table["ours"] - table["paper"]).all()
    assert all(isinstance(w, str) and w for w in table["why"])
    assert f"{drop.summary['pull_density']:.2%}" in table.loc["accuracy 99% drop", "why"]
    marian = gd.marian_table(runs["marian"])
    with_marian = gd.paper_vs_ours(dense, drop, runs["diagnosis"][("adagrad", "99% pushes, dense pulls")], gaps,
                                   "pcie3_x16", gd.PUBLISHED, marian)
    row = with_marian.loc["accuracy 99% drop, Marian's setting"]
    assert row["ours"] == marian.loc[("async", "99%, all three (Marian)"), "final accuracy"]
    assert "dense warm-up steps alone" in with_marian.loc["accuracy 99% drop", "why"]


def test_oland_raj_tables_from_smoke_runs(tmp_path):
    from thinwire.papers import oland_raj as orr
    runs = orr.oland_raj_runs("smoke")
    shrink = dict(train_samples=500, steps=10, eval_every=5, eval_samples=200)
    headline = {k: run(c.replace(**shrink), root=tmp_path) for k, c in runs.headline.items()}
    table = orr.paper_vs_ours(headline, [0], orr.PUBLISHED)
    assert table.loc["bits/param Huffman, c=5 M=4", "paper"] == orr.PUBLISHED["bits_huffman_c5m4"]
    rates = orr.mean_bit_rates(headline, "c=5, M=4", [0])
    assert table.loc["bits/param Huffman, c=5 M=4", "ours"] == pytest.approx(rates["sent"].mean())
    assert rates["sent"].mean() < rates["raw"].mean() < 32
    l1 = orr.l1_ablation({k: run(c.replace(**shrink), root=tmp_path) for k, c in runs.l1.items()})
    assert list(l1.index) == sorted({s for _, s in runs.l1}) and (l1["raw bits"] > 0).all()
    findings = orr.why_it_differs(headline, [0], l1, 1e-5, 1)
    assert len(findings) == 6 and all(isinstance(f, str) for f in findings)
    assert f"{rates['ans'].mean():.3f}" in findings[-1]
