"""The EventGraD paper package: its runs and the numbers its notebook reports, from real
(tiny) runs."""

from pathlib import Path

import numpy as np
import pytest

from thinwire.experiment import run
from thinwire.papers import eventgrad as eg
from thinwire.papers import paper


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """Each method at 4 and 3 peers, 12 iterations, 3 forced; a sweep of two horizons."""
    root = tmp_path_factory.mktemp("results")
    base = eg.eventgrad_runs(profile="smoke").headline[("D-PSGD", 4, 0)].replace(
        train_samples=1536, steps=12, eval_every=6, eval_samples=300)
    headline = {}
    for k in (4, 3):
        for label, settings in eg.methods(forced=3).items():
            headline[(label, k, 0)] = run(base.replace(workers=k, **settings), root=root)
    sweep = {("paper", 1.0): headline[("EventGraD", 4, 0)],
             ("code", 0.5): run(base.replace(**eg.methods(0.5, "code", 3)["EventGraD"]), root=root)}
    return headline, sweep


def test_runs_follow_the_profile_and_the_official_setup():
    runs = eg.eventgrad_runs(profile="default", studies=True)
    assert runs.peers == (4, 8, 16) and runs.seeds == (0, 1, 2)
    headline_only = eg.eventgrad_runs(profile="default")  # the 15-minute budget: the studies are quoted
    assert headline_only.peers == (4,) and not headline_only.studies and len(headline_only.all()) == 9
    assert headline_only.sweep == {("paper", 1.0): headline_only.headline[("EventGraD", 4, 0)]}
    assert headline_only.heartbeat == {} and headline_only.topk_every is None and headline_only.cifar_optimizer == {}
    assert set(headline_only.topk) == {0.1} and headline_only.topk_copy == {} and headline_only.gloo.steps == 60
    assert eg.eventgrad_runs(profile="smoke").studies and eg.eventgrad_runs(profile="default", dataset="cifar10").studies
    with pytest.raises(ValueError, match="studies=1 is not allowed"):
        eg.eventgrad_runs(profile="default", studies=1)
    c = runs.headline[("EventGraD", 8, 0)]
    assert (c.model, c.batch_size, c.lr, c.sampling, c.workers) == ("eventgrad_mnist_cnn", 64, 0.05, "sequential", 8)
    assert c.steps == 60000 // 8 // 64 * 3 and c.eval_every == 60000 // 8 // 64
    assert runs.headline[("EventGraD Top-10%", 4, 0)].push_codec == "topk(ratio=0.1)"
    assert runs.sweep[("paper", 1.0)] is runs.headline[("EventGraD", 4, 0)]
    assert ("code", 0.9) in runs.sweep and runs.gloo.steps == 60
    assert runs.heartbeat[25].push_policy.endswith("max_gap=25)") and set(runs.topk) == {0.1, 0.5}
    assert runs.length == {} and runs.length_epochs == 0  # nine runs' worth: long-runs/ and the paper profile have them
    ten = eg.eventgrad_runs(profile="default", length_epochs=10)  # long-runs/eventgrad_epochs10: headline + length
    assert set(ten.length) == {(label, s) for label in eg.LABELS for s in (0, 1, 2)}
    assert all(ten.length[(label, s)] == ten.headline[(label, 4, s)].replace(steps=10 * (60000 // 4 // 64))
               for label in eg.LABELS for s in (0, 1, 2))
    assert eg.eventgrad_runs(profile="paper").length_epochs == 20
    assert set(runs.topk_copy) == {0, 1, 2} and runs.topk_copy[1] == runs.headline[("EventGraD Top-10%", 4, 1)].replace(
        push_policy=eg.event(topk=0.1, norm_of="copy"))
    with pytest.raises(ValueError, match="length_epochs=-1 is not allowed"):
        eg.eventgrad_runs(profile="default", length_epochs=-1)
    assert runs.topk_every.push_policy.startswith("event(horizon=0.0") and runs.topk_every.push_codec == "topk(ratio=0.1)"
    sgd = runs.cifar_optimizer["EventGraD Top-10%"]
    assert (sgd.lr, sgd.momentum) == (0.01, 0.9) and sgd.replace(lr=0.05, momentum=0.0) == \
        runs.headline[("EventGraD Top-10%", 4, 0)]
    assert eg.eventgrad_runs(profile="default", steps=100).headline[("D-PSGD", 4, 0)].steps == 100
    with pytest.raises(ValueError, match="profile='huge' is not allowed"):
        eg.eventgrad_runs(profile="huge")
    with pytest.raises(ValueError, match="horizon=-1.0 is not allowed"):
        eg.eventgrad_runs(profile="smoke", horizon=-1.0)
    assert set(paper("eventgrad").recipes) == set(eg.LABELS)
    assert not runs.causes and runs.heartbeat_seeds == {} and runs.momentum == {}  # long-runs/eventgrad_causes
    causes = eg.eventgrad_runs(profile="default", causes=True)
    assert set(causes.heartbeat_seeds) == {0, 1, 2} and causes.max_gap == 25
    assert causes.heartbeat_seeds[2] == runs.headline[("EventGraD", 4, 2)].replace(push_policy=eg.event(max_gap=25))
    assert causes.momentum[("D-PSGD", 1)] == runs.headline[("D-PSGD", 4, 1)].replace(lr=0.01, momentum=0.9)
    assert set(causes.momentum_search) == {2.0, 4.0, 8.0} and causes.momentum_at(3.0, 1) == causes.momentum[("EventGraD", 1)].replace(
        push_policy=eg.event(3.0))
    assert causes.random_at(1, 0.25) == runs.headline[("D-PSGD", 4, 1)].replace(push_policy="random_send(p=0.25, forced=29)")
    assert eg.eventgrad_runs(profile="smoke").causes
    with pytest.raises(ValueError, match="causes='yes' is not allowed"):
        eg.eventgrad_runs(profile="default", causes="yes")


def test_tables_count_messages_and_elements_from_the_ledgers(tiny):
    headline, sweep = tiny
    dpsgd, event, topk = (headline[(label, 4, 0)] for label in eg.LABELS)
    assert eg.messages(dpsgd) == 2 * 8 * 4 * 12 == len(dpsgd.ledger)
    t1, t2 = eg.table1(headline, (4, 3)), eg.table2(headline, (4, 3))
    assert t1.loc[4, "% messages"] == pytest.approx(100 * len(event.ledger) / len(dpsgd.ledger))
    payload = lambda r: sum(row[6] for row in r.ledger.rows())
    assert t2.loc[4, "% communication (elements)"] == pytest.approx(100 * payload(topk) / payload(dpsgd))
    assert t2.loc[4, "% communication (wire bytes)"] > t2.loc[4, "% communication (elements)"]  # framing weighs more
    assert t1.loc[3, "D-PSGD accuracy"] == pytest.approx(100 * headline[("D-PSGD", 3, 0)].summary["final_accuracy"])
    shares = eg.per_tensor_messages({"EventGraD": event, "D-PSGD": dpsgd}, dpsgd)
    assert (shares["% messages D-PSGD"] == 100.0).all()
    assert shares.loc["net.0.bias", "framing share, D-PSGD"] > 0.2 > 0.01 > shares.loc["net.8.weight", "framing share, D-PSGD"]
    assert shares.loc["size-weighted", "% messages EventGraD"] == pytest.approx(
        sum(row[6] for row in event.ledger.rows()) / sum(row[6] for row in dpsgd.ledger.rows()) * 100)
    frame = eg.framing_table({"D-PSGD": dpsgd, "Top": topk})
    assert frame.loc["D-PSGD", "payload/message"] == pytest.approx(4 * 27480 / 8)
    times = eg.time_table({"D-PSGD": dpsgd, "EventGraD": event}, ("ethernet_10g_tcp",))
    assert times.loc["D-PSGD", "ethernet_10g_tcp: speed-up"] == 1.0
    table = eg.sweep_table(sweep, dpsgd)
    assert list(table.index) == [("code", 0.5), ("paper", 1.0)]
    optimizer = eg.optimizer_table({"plain": {label: headline[(label, 4, 0)] for label in eg.LABELS},
                                    "again": {label: headline[(label, 3, 0)] for label in eg.LABELS}})
    assert optimizer.loc["D-PSGD", "gap, plain"] == 0.0 and optimizer.loc["EventGraD", "% messages, again"] == \
        pytest.approx(t1.loc[3, "% messages"])
    assert optimizer.loc["EventGraD Top-10%", "% communication, plain"] == \
        pytest.approx(t2.loc[4, "% communication (elements)"])
    comparison = eg.paper_vs_ours(t1, t2, table, eg.PUBLISHED, 1.0, optimizer=optimizer)
    why = comparison.loc["4 peers: accuracy gap, Top-10% - D-PSGD (Table 2, points)", "why"]
    assert f"again {optimizer.loc['EventGraD Top-10%', 'gap, again']:+.2f}" in why
    assert comparison.loc["4 peers: % of messages, EventGraD (Table 1)", "paper"] == 43.24
    assert comparison.loc["3 peers: % of messages, EventGraD (Table 1)", "paper"] is None or \
        np.isnan(comparison.loc["3 peers: % of messages, EventGraD (Table 1)", "paper"])


def test_traces_and_epoch_losses(tiny):
    headline, _ = tiny
    event = headline[("EventGraD", 4, 0)]
    traces = eg.traces(event)
    assert set(traces) == set(eg.tensor_sizes(event))  # 8 tensors, all traced
    norm, threshold = traces["net.0.bias"]
    assert len(norm) == 12 and threshold[0] == 0.0 and (norm > 0).all()
    assert eg.epoch_losses(event).shape == (2,)
    last = eg.last_events(event)
    assert set(last) == set(traces) and max(last.values()) <= 12
    assert all(step + 1 <= last[tensor] for step, _, sender, _, tensor, _, _ in event.ledger.rows() if sender == 0)


def test_slowed_d_psgd_takes_the_step_share_and_is_quoted(tiny, tmp_path):
    headline, sweep = tiny
    dpsgd, event, topk = (headline[(label, 4, 0)] for label in eg.LABELS)
    assert eg.step_share(dpsgd) == pytest.approx(1.0, abs=1e-5)
    share = eg.step_share(topk)
    assert share < 1.0
    assert eg.slowed_lr(topk, dpsgd) == pytest.approx(dpsgd.config.lr * share, rel=1e-3)
    slowed = {label: run(dpsgd.config.replace(lr=eg.slowed_lr(r, dpsgd)), root=tmp_path)
              for label, r in (("EventGraD", event), ("EventGraD Top-10%", topk))}
    table = eg.slowed_table({"EventGraD": event, "EventGraD Top-10%": topk}, slowed, dpsgd)
    assert table.loc["EventGraD Top-10%", "mean step share"] == share
    assert table.loc["EventGraD Top-10%", "gap, D-PSGD at lr x share"] == \
        pytest.approx(eg.accuracy(slowed["EventGraD Top-10%"]) - eg.accuracy(dpsgd))
    t1, t2 = eg.table1(headline, (4,)), eg.table2(headline, (4,))
    comparison = eg.paper_vs_ours(t1, t2, eg.sweep_table(sweep, dpsgd), eg.PUBLISHED, 1.0, slowed=table)
    why = comparison.loc["4 peers: accuracy gap, Top-10% - D-PSGD (Table 2, points)", "why"]
    assert f"travelled {share:.2f} of its gradient steps" in why
    with pytest.raises(ValueError, match="no mean_step_share"):
        eg.step_share(type("R", (), {"metrics": {}})())


def test_length_table_takes_gaps_per_seed_with_their_standard_error(tiny, tmp_path):
    headline, sweep = tiny
    short = {(label, 0): headline[(label, 4, 0)] for label in eg.LABELS}
    long = {(label, s): run(headline[(label, 4, 0)].config.replace(steps=18, seed=s), root=tmp_path)
            for label in eg.LABELS for s in (0, 1)}
    table = eg.length_table(short, long)
    assert list(table.index) == [(2, label) for label in eg.LABELS] + [(3, label) for label in eg.LABELS]
    gaps = [eg.accuracy(long[("EventGraD", s)]) - eg.accuracy(long[("D-PSGD", s)]) for s in (0, 1)]
    row = table.loc[(3, "EventGraD")]
    assert row["gap to D-PSGD"] == pytest.approx(np.mean(gaps))
    assert row["gap se"] == pytest.approx(np.std(gaps, ddof=1) / np.sqrt(2))
    assert row["seeds"] == 2 and np.isnan(table.loc[(2, "EventGraD"), "gap se"])
    assert table.loc[(3, "D-PSGD"), "mean step share"] == pytest.approx(1.0, abs=1e-5)
    t1, t2 = eg.table1(headline, (4,)), eg.table2(headline, (4,))
    comparison = eg.paper_vs_ours(t1, t2, eg.sweep_table(sweep, headline[("D-PSGD", 4, 0)]), eg.PUBLISHED, 1.0,
                                  length=table)
    why = comparison.loc["4 peers: accuracy gap, EventGraD - D-PSGD (Table 1, points)", "why"]
    assert f"3 epochs {row['gap to D-PSGD']:+.2f} (se {row['gap se']:.2f}, 2 seeds)" in why


def test_a_notebook_quotes_the_length_study_a_long_run_recorded(tmp_path):
    import json

    import pandas as pd

    from thinwire.scraps import MIME, table_scrap
    frame = pd.DataFrame({"seeds": [3.0, 3.0], "gap to D-PSGD": [-1.5, -3.25]},
                         index=pd.MultiIndex.from_tuples([(10, "D-PSGD"), (10, "EventGraD")], names=["epochs", "method"]))
    cell = {"cell_type": "code", "execution_count": 1, "metadata": {}, "source": "",
            "outputs": [{"output_type": "display_data", "metadata": {},
                         "data": {MIME: {"name": "length", "value": table_scrap(frame)}}}]}
    path = tmp_path / "long.ipynb"
    path.write_text(json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    quoted = eg.quoted_length(path)
    assert quoted.loc[(10, "EventGraD"), "gap to D-PSGD"] == -3.25 and list(quoted.index.names) == ["epochs", "method"]
    assert eg.quoted_length(tmp_path / "missing.ipynb") is None


def test_the_causes_set_each_trigger_against_a_random_one_at_its_share_seed_by_seed(tiny, tmp_path):
    headline, sweep = tiny
    base = {label: headline[(label, 4, 0)].config for label in eg.LABELS}
    seeds = (0, 1)
    at = lambda label, s, **change: run(base[label].replace(seed=s, **change), root=tmp_path)
    dpsgd = {s: at("D-PSGD", s) for s in seeds}
    event = {s: at("EventGraD", s) for s in seeds}
    beat = {s: at("EventGraD", s, push_policy=eg.event(forced=3, max_gap=2)) for s in seeds}
    share = lambda r: round(eg.share_after_forced(r, 3), 3)
    random_at = lambda r, s: at("D-PSGD", s, push_policy=f"random_send(p={share(r)}, forced=3)")
    event_random = {s: random_at(event[s], s) for s in seeds}
    beat_random = {s: random_at(beat[s], s) for s in seeds}
    table = eg.pinning_table(event, event_random, beat, beat_random, dpsgd, 2)
    worth = [eg.accuracy(event[s]) - eg.accuracy(event_random[s]) for s in seeds]
    assert table.loc["EventGraD", "choice worth"] == pytest.approx(np.mean(worth))
    assert table.loc["EventGraD", "choice se"] == pytest.approx(np.std(worth, ddof=1) / np.sqrt(2))
    effect = [eg.accuracy(beat[s]) - eg.accuracy(beat_random[s]) - w for s, w in zip(seeds, worth)]
    assert table.loc["heartbeat's effect", "choice worth"] == pytest.approx(np.mean(effect))
    assert table.loc["EventGraD + heartbeat every 2", "% messages"] >= table.loc["EventGraD", "% messages"]
    # momentum: the matched horizon interpolates the searched shares in log horizon
    momentum = {label: {s: at(label, s, lr=0.01, momentum=0.9) for s in seeds} for label in eg.LABELS[:2]}
    search = {h: at("EventGraD", 0, lr=0.01, momentum=0.9, push_policy=eg.event(h, forced=3)) for h in (1.0, 4.0)}
    shares = {h: eg.messages_pct(r, momentum["D-PSGD"][0]) for h, r in search.items()}
    target = (shares[1.0] + shares[4.0]) / 2
    h = eg.matched_horizon(search, momentum["D-PSGD"][0], target)
    assert (1.0 <= h <= 4.0) if shares[1.0] != shares[4.0] else h in (1.0, 4.0)
    assert eg.matched_horizon(search, momentum["D-PSGD"][0], 1000.0) == min(shares, key=lambda k: -shares[k])
    matched = eg.momentum_table(event, dpsgd, momentum["EventGraD"], momentum["EventGraD"], momentum["D-PSGD"], 2.5)
    assert list(matched.index) == ["no momentum, horizon 1", "momentum 0.9, horizon 1",
                                   "momentum 0.9, horizon 2.5 (matched share)"]
    t1, t2 = eg.table1(headline, (4,)), eg.table2(headline, (4,))
    why = eg.paper_vs_ours(t1, t2, eg.sweep_table(sweep, headline[("D-PSGD", 4, 0)]), eg.PUBLISHED, 1.0,
                           pinning=table, matched=matched).loc[
        "4 peers: accuracy gap, EventGraD - D-PSGD (Table 1, points)", "why"]
    assert "pinning (stale copies hold" in why and "over 2 seeds" in why and "2 seed(s), indicative" in why
    assert f"the heartbeat changes what the trigger's choice is worth by {np.mean(effect):+.2f}" in why
    assert "momentum against share, each against its own D-PSGD over 2 seeds (indicative): " in why


def test_a_notebook_quotes_the_causes_a_long_run_recorded(tmp_path):
    import json

    import pandas as pd

    from thinwire.scraps import MIME, table_scrap
    frame = pd.DataFrame({"gap to D-PSGD": [-2.5, -1.0]}, index=["EventGraD", "heartbeat's effect"])
    cell = {"cell_type": "code", "execution_count": 1, "source": "", "metadata": {},
            "outputs": [{"output_type": "display_data", "metadata": {},
                         "data": {MIME: {"name": "pinning", "value": table_scrap(frame)}}}]}
    path = tmp_path / "causes.ipynb"
    path.write_text(json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    quoted = eg.quoted_studies(path)
    assert list(quoted) == ["pinning"] and quoted["pinning"].loc["heartbeat's effect", "gap to D-PSGD"] == -1.0
    assert eg.quoted_studies(tmp_path / "no.ipynb") == {}
    made = []
    assert eg.study("pinning", lambda: made.append(1), False, quoted) is quoted["pinning"] and made == []
    assert eg.study("momentum_matched", lambda: made.append(1), False, quoted) is None and made == []


def test_the_committed_long_run_holds_every_study_the_default_notebook_quotes():
    from thinwire.paths import source_checkout
    quoted = eg.quoted_studies((source_checkout() or Path.cwd()) / eg.CAUSES_RUN)
    assert set(quoted) == {"table1", "table2", "sweep", "trigger", "heartbeat", "optimizer", "topk_fractions",
                           "topk_norm_of", "slowed", "pinning", "momentum_matched"}
    assert list(quoted["table1"].index) == [4, 8, 16] and ("code", 0.99) in quoted["sweep"].index
    t1, t2 = quoted["table1"], quoted["table2"]
    why = eg.paper_vs_ours(t1, t2, quoted["sweep"], eg.PUBLISHED, 1.0, quoted["trigger"], None, quoted["topk_fractions"],
                           quoted["heartbeat"], "mnist", quoted["optimizer"], quoted["slowed"], quoted["topk_norm_of"],
                           quoted["pinning"], quoted["momentum_matched"])
    assert "the heartbeat changes what the trigger's choice is worth" in " ".join(why["why"])


def test_the_pinning_why_reads_the_heartbeats_effect_by_its_sign_and_standard_error():
    import pandas as pd
    from thinwire.papers.eventgrad.analysis import _pinning_why

    def table(effect, se, seeds=3):
        rows = {label: {"seeds": seeds, "gap to D-PSGD": -2.0, "gap se": 0.3, "% messages": 30.0}
                for label in ("EventGraD", "random", "EventGraD + heartbeat every 25", "random at its share")}
        frame = pd.DataFrame(rows).T
        frame.loc["heartbeat's effect", ["seeds", "choice worth", "choice se"]] = [seeds, effect, se]
        return frame
    assert "a rise of more than two standard errors, as pinning predicts" in _pinning_why(table(0.5, 0.1))
    assert "a fall of more than two standard errors" in _pinning_why(table(-0.29, 0.125))
    assert "within two standard errors of 0" in _pinning_why(table(0.1, 0.1))
    assert "2 seed(s), indicative" in _pinning_why(table(0.5, 0.1, seeds=2))
