"""The numbers the EventGraD notebook reports, computed from results (tested).

Units. *Messages* are ledger rows of the ring phase: one per tensor per neighbour, as the
official code counts them (``num_events += 2`` per tensor event). *Communication* in the
paper's unit is elements: a whole tensor sends numel values; a Top-K message sends k values
and k indices (2k, Sec. 7). Our fp32 values and int32 indices are 4 bytes each, so the
elements are payload bytes / 4 and the paper's percentage is a ratio of payloads. The wire
adds each message's framing (header and checksum), which the paper does not count.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ...comm import PRESETS
from ...experiment import measures

if TYPE_CHECKING:
    import pandas as pd

PHASE = "ring"


def messages(result) -> int:
    return int(result.summary[f"{PHASE}_messages"])


def messages_pct(result, dpsgd) -> float:
    """Messages as % of D-PSGD's over the same iterations (Table 1's last column)."""
    return 100.0 * messages(result) / messages(dpsgd)


def communication_pct(result, dpsgd, wire: bool = False) -> float:
    """Elements sent as % of D-PSGD's (Table 2's last column): payload bytes, or with
    ``wire`` the whole messages, framing included."""
    key = f"{PHASE}_bytes" if wire else f"{PHASE}_payload"
    return 100.0 * result.summary[key] / dpsgd.summary[key]


def accuracy(result) -> float:
    """Final test accuracy of the mean of the peers' models, in % (the paper's unit)."""
    return 100.0 * measures.final_accuracy(result)


def mean_accuracy(results) -> float:
    return float(np.mean([accuracy(r) for r in results]))


def _seeds(headline: dict, label: str, peers: int) -> list:
    return [r for (name, k, _), r in sorted(headline.items(), key=lambda item: item[0][2])
            if name == label and k == peers]


def table1(headline: dict, peers) -> "pd.DataFrame":
    """Table 1 analogue per ring size: D-PSGD and EventGraD accuracy (mean over seeds),
    their gap, and EventGraD's messages as % of D-PSGD's (mean over seeds)."""
    import pandas as pd
    rows = {}
    for k in peers:
        dpsgd, event = _seeds(headline, "D-PSGD", k), _seeds(headline, "EventGraD", k)
        rows[k] = {"seeds": len(event), "D-PSGD accuracy": mean_accuracy(dpsgd),
                   "EventGraD accuracy": mean_accuracy(event),
                   "gap (EventGraD - D-PSGD)": mean_accuracy(event) - mean_accuracy(dpsgd),
                   "% messages": float(np.mean([messages_pct(e, d) for e, d in zip(event, dpsgd)]))}
    return pd.DataFrame(rows).T.rename_axis("peers")


def table2(headline: dict, peers) -> "pd.DataFrame":
    """Table 2 analogue: Top-10% accuracy, % messages, % communication (payload: the
    paper's elements; wire: with framing), means over seeds."""
    import pandas as pd
    rows = {}
    for k in peers:
        dpsgd, topk = _seeds(headline, "D-PSGD", k), _seeds(headline, "EventGraD Top-10%", k)
        pairs = list(zip(topk, dpsgd))
        rows[k] = {"seeds": len(topk), "Top-K accuracy": mean_accuracy(topk),
                   "gap to D-PSGD": mean_accuracy(topk) - mean_accuracy(dpsgd),
                   "% messages": float(np.mean([messages_pct(t, d) for t, d in pairs])),
                   "% communication (elements)": float(np.mean([communication_pct(t, d) for t, d in pairs])),
                   "% communication (wire bytes)": float(np.mean([communication_pct(t, d, True) for t, d in pairs]))}
    return pd.DataFrame(rows).T.rename_axis("peers")


def framing_table(results: dict) -> "pd.DataFrame":
    """Per method: payload and framing bytes per iteration, and framing's share of the
    wire; the mean message's payload (the small bias tensors make framing matter)."""
    import pandas as pd
    rows = {}
    for label, r in results.items():
        t = measures.traffic(r, f"{PHASE}_")
        steps = r.config.steps
        rows[label] = {"payload/iteration": t.payload / steps, "framing/iteration": t.framing / steps,
                       "framing share of the wire": t.framing / t.bytes, "payload/message": t.payload / t.messages,
                       "framing/message": t.framing / t.messages}
    return pd.DataFrame(rows).T


def tensor_sizes(result) -> dict[str, int]:
    """Parameters per tensor of the run's model (what one whole-tensor message carries)."""
    from ...models import build_model
    from ...datasets import IMAGE_SHAPES
    model = build_model(result.config.model, IMAGE_SHAPES[result.config.dataset], 10, 0)
    return {n: p.numel() for n, p in model.named_parameters()}


def per_tensor_messages(results: dict, dpsgd) -> "pd.DataFrame":
    """Per tensor: its parameters, the framing share of one of its D-PSGD messages (header
    and checksum over the whole message) and, per method, its messages as % of D-PSGD's;
    the last row weighs each tensor by its size (the share of elements a whole-tensor send
    moves; the framing share there is the whole wire's)."""
    import pandas as pd
    from collections import Counter
    sizes = tensor_sizes(dpsgd)
    rows = dpsgd.ledger.rows()
    base = Counter(row[4] for row in rows)
    wire, payload = Counter(), Counter()
    for row in rows:
        wire[row[4]] += row[5]
        payload[row[4]] += row[6]
    frame = pd.DataFrame({"parameters": sizes,
                          "framing share, D-PSGD": {n: 1 - payload[n] / wire[n] for n in sizes}})
    for label, r in results.items():
        count = Counter(row[4] for row in r.ledger.rows())
        frame[f"% messages {label}"] = [100.0 * count[n] / base[n] for n in sizes]
    weights = frame["parameters"] / frame["parameters"].sum()
    frame.loc["size-weighted"] = [frame["parameters"].sum(), 1 - sum(payload.values()) / sum(wire.values()),
                                  *[(frame[c] * weights).sum() for c in frame.columns[2:]]]
    return frame


def last_events(result, peer: int = 0) -> dict[str, int]:
    """Per tensor: the last iteration (1-based) at which ``peer`` sent it."""
    last: dict[str, int] = {}
    for step, _, sender, _, tensor, _, _ in result.ledger.rows():
        if sender == peer:
            last[tensor] = max(last.get(tensor, 0), step + 1)
    return last


def iteration_seconds(result, network: str) -> float:
    """Modelled seconds per iteration: the median measured compute step plus the ledger's
    communication priced on ``network`` (latency per phase and per message, bandwidth)."""
    steps = result.config.steps
    return (measures.measured_seconds(result, "compute_seconds") + measures.priced_seconds(result, network)) / steps


def time_table(results: dict, networks) -> "pd.DataFrame":
    """Per method and network: modelled communication ms per iteration, total ms per
    iteration, and the speed-up over the first method (D-PSGD)."""
    import pandas as pd
    rows = {}
    first = next(iter(results.values()))
    for label, r in results.items():
        row = {}
        for net in networks:
            row[f"{net}: comm ms/iter"] = 1e3 * measures.priced_seconds(r, net) / r.config.steps
            row[f"{net}: ms/iter"] = 1e3 * iteration_seconds(r, net)
            row[f"{net}: speed-up"] = iteration_seconds(first, net) / iteration_seconds(r, net)
        rows[label] = row
    return pd.DataFrame(rows).T


def network_notes(networks) -> dict[str, str]:
    return {n: PRESETS[n].name for n in networks}


def epoch_losses(result) -> np.ndarray:
    """Mean training loss (over peers and the iterations of each epoch), per epoch (Fig. 6)."""
    per_epoch = result.config.eval_every
    loss = np.array([np.nan if v is None else v for v in result.metrics["loss"]], dtype=float)
    whole = len(loss) // per_epoch
    return np.nanmean(loss[:whole * per_epoch].reshape(whole, per_epoch), axis=1)


def traces(result) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """{tensor: (norm, threshold) per iteration} of peer 0 (Figs. 4-5)."""
    m = result.metrics
    names = [k.split("/", 1)[1] for k in m if k.startswith("norm/")]
    return {n: (np.array(m[f"norm/{n}"], dtype=float), np.array(m[f"threshold/{n}"], dtype=float)) for n in names}


def sweep_table(sweep: dict, dpsgd) -> "pd.DataFrame":
    """Per (rule, horizon): accuracy, its gap to D-PSGD (same seed, same length), % messages."""
    import pandas as pd
    rows = {}
    for (rule, horizon), r in sorted(sweep.items()):
        rows[(rule, horizon)] = {"accuracy": accuracy(r), "gap to D-PSGD": accuracy(r) - accuracy(dpsgd),
                                 "% messages": messages_pct(r, dpsgd)}
    frame = pd.DataFrame(rows).T
    frame.index.names = ["rule", "horizon"]
    return frame


def _closest(sweep_frame, target_pct: float) -> str:
    """The sweep point whose % messages is closest to ``target_pct``, as text."""
    distance = (sweep_frame["% messages"] - target_pct).abs()
    rule, h = distance.idxmin()
    row = sweep_frame.loc[(rule, h)]
    return f"{rule} rule, horizon {h:g}: {row['% messages']:.1f}% of messages, gap {row['gap to D-PSGD']:+.2f}"


def _optimizer_evidence(optimizer, label: str) -> str:
    """The gap of ``label`` under each SGD setting of ``optimizer_table``."""
    if optimizer is None or label not in optimizer.index:
        return ""
    names = [c[len("gap, "):] for c in optimizer.columns if c.startswith("gap, ")]
    return "; by SGD setting (one seed, indicative): " + ", ".join(
        f"{name} {optimizer.loc[label, f'gap, {name}']:+.2f} at {optimizer.loc[label, f'% messages, {name}']:.1f}% "
        "of messages" for name in names)


def length_table(short: dict, long: dict) -> "pd.DataFrame":
    """The training-length study: ``{(label, seed): result}`` at the profile's length and at
    the study's, 4 peers, the same seeds. Per (epochs, method): ``paired_table``'s mean
    accuracy, mean of the per-seed gaps to D-PSGD with its standard error and % of D-PSGD's
    messages, and the mean model's step share (``step_share``), means over the seeds."""
    import pandas as pd
    frames = {}
    for runs in (short, long):
        seeds = sorted({s for (_, s) in runs})
        epochs = int(round(next(iter(runs.values())).config.steps / next(iter(runs.values())).config.eval_every))
        groups = {label: {s: runs[(label, s)] for s in seeds} for label in dict.fromkeys(m for m, _ in runs)}
        frame = paired_table(groups, {s: runs[("D-PSGD", s)] for s in seeds})
        frame["mean step share"] = [float(np.mean([step_share(r) for r in group.values()])) for group in groups.values()]
        frames[epochs] = frame
    frame = pd.concat(frames)
    frame.index.names = ["epochs", "method"]
    return frame


def mean_se(values) -> tuple[float, float]:
    """(mean, standard error) of per-seed values; the error is NaN for one seed."""
    values = np.asarray(values, dtype=float)
    se = float(values.std(ddof=1) / np.sqrt(len(values))) if len(values) > 1 else float("nan")
    return float(values.mean()), se


def paired_table(groups: dict, dpsgd: dict) -> "pd.DataFrame":
    """{label: {seed: result}} against ``dpsgd`` ({seed: D-PSGD result}, same seeds and
    length): per label, the mean accuracy, the mean of the per-seed gaps to D-PSGD and its
    standard error, and % of D-PSGD's messages, over the seeds."""
    import pandas as pd
    rows = {}
    for label, runs in groups.items():
        seeds = sorted(runs)
        gap, se = mean_se([accuracy(runs[s]) - accuracy(dpsgd[s]) for s in seeds])
        rows[label] = {"seeds": len(seeds), "accuracy": float(np.mean([accuracy(runs[s]) for s in seeds])),
                       "gap to D-PSGD": gap, "gap se": se,
                       "% messages": float(np.mean([messages_pct(runs[s], dpsgd[s]) for s in seeds]))}
    return pd.DataFrame(rows).T


def _norm_of_why(norm_of) -> str:
    """What the norm-recorded test (``paired_table`` of the two Top-10% runs) says."""
    if norm_of is None or len(norm_of) < 2:
        return ""
    (code, a), (copy, b) = list(norm_of.iterrows())[:2]
    return (f"; recording the receivers' copy's norm at an event in place of the tensor's: gap {b['gap to D-PSGD']:+.2f} "
            f"(se {b['gap se']:.2f}) at {b['% messages']:.1f}% of messages against {a['gap to D-PSGD']:+.2f} "
            f"(se {a['gap se']:.2f}) at {a['% messages']:.1f}%, {int(a['seeds'])} seeds")


LONG_RUN = "long-runs/eventgrad_epochs10.ipynb"  # the default profile with the official code's 10 epochs


def quoted_length(path) -> "pd.DataFrame | None":
    """The ``length_table`` a committed long run recorded (its ``length`` scrap), for a
    notebook that does not run the study itself; None when the file or the scrap is missing."""
    import pandas as pd

    from ...scraps import quoted_table
    table = quoted_table(path, "length")
    if table is None:
        return None
    table.index = pd.MultiIndex.from_tuples([(int(i.split(" / ")[0]), i.split(" / ", 1)[1]) for i in table.index],
                                            names=["epochs", "method"])
    return table.astype(float)


def _length_why(length, label: str) -> str:
    """What the training-length study (``length_table``) says of ``label``."""
    if length is None or label not in length.index.get_level_values("method"):
        return ""
    parts = [f"{int(e)} epochs {row['gap to D-PSGD']:+.2f} (se {row['gap se']:.2f}, {int(row['seeds'])} seeds) at "
             f"{row['% messages']:.1f}% of messages, mean step share {row['mean step share']:.2f}"
             for (e, m), row in length.iterrows() if m == label]
    return "; by training length, 4 peers: " + ", ".join(parts)


def _topk_why(fractions, ours_msgs: float, msgs, length=None, norm_of=None) -> str:
    text = f"Top-K sends {ours_msgs:.1f}% of messages (paper {msgs}), 10% of a tensor's entries per event"
    if fractions is None:
        return text + "; open: no experiment here explains the gap yet"
    steps = ", ".join(f"{label} {row['gap to D-PSGD']:+.2f}" for label, row in fractions.iloc[1:].iterrows())
    text += (f"; gap to D-PSGD without the trigger and as each event carries more of the tensor (one seed, "
             f"indicative): {steps}")
    return text + _norm_of_why(norm_of) + _length_why(length, "EventGraD Top-10%")


def _slowed_why(slowed, label: str) -> str:
    """What the slowed-D-PSGD test (``slowed_table``) says of ``label``."""
    if slowed is None or label not in slowed.index:
        return ""
    row = slowed.loc[label]
    return (f"; its copies lag, so the averaging pulls the peers' mean back: the mean model travelled "
            f"{row['mean step share']:.2f} of its gradient steps, and D-PSGD run at lr x {row['mean step share']:.2f} "
            f"trails full-step D-PSGD by {row['gap, D-PSGD at lr x share']:+.2f} where {label} trails by "
            f"{row['gap to D-PSGD']:+.2f} (one seed, indicative)")


def _pinning_why(pinning) -> str:
    """What the pinning test (``causes.pinning_table``) says."""
    if pinning is None or "heartbeat's effect" not in pinning.index:
        return ""
    rows = [(label, row) for label, row in pinning.iterrows() if label != "heartbeat's effect"]
    effect = pinning.loc["heartbeat's effect"]
    (event, e), (_, er), (beat, b), (_, br) = rows[:4]
    if effect["seeds"] < 3:
        verdict = f"{int(effect['seeds'])} seed(s), indicative"
    elif effect["choice worth"] > 2 * effect["choice se"]:
        verdict = "a rise of more than two standard errors, as pinning predicts"
    elif effect["choice worth"] < -2 * effect["choice se"]:
        verdict = ("a fall of more than two standard errors: the heartbeat buys no more than its extra messages buy "
                   "a random trigger, so pinning is not shown to cost accuracy")
    else:
        verdict = "within two standard errors of 0: pinning is not shown to cost accuracy"
    return (f"; pinning (stale copies hold a tensor near its neighbours', so its norm stops moving and the trigger "
            f"stops firing), tested over {int(effect['seeds'])} seeds against a random trigger at each run's share: "
            f"{event} {e['gap to D-PSGD']:+.2f} (se {e['gap se']:.2f}) at {e['% messages']:.1f}% of messages, random "
            f"{er['gap to D-PSGD']:+.2f} (se {er['gap se']:.2f}); {beat} {b['gap to D-PSGD']:+.2f} (se "
            f"{b['gap se']:.2f}) at {b['% messages']:.1f}%, random {br['gap to D-PSGD']:+.2f} (se {br['gap se']:.2f}); "
            f"the heartbeat changes what the trigger's choice is worth by {effect['choice worth']:+.2f} points "
            f"(se {effect['choice se']:.2f}), {verdict}")


def _momentum_why(matched) -> str:
    """What the momentum test at a matched share (``causes.momentum_table``) says."""
    if matched is None or len(matched) < 3:
        return ""
    parts = [f"{label} {row['gap to D-PSGD']:+.2f} (se {row['gap se']:.2f}) at {row['% messages']:.1f}% of messages"
             for label, row in matched.iterrows()]
    seeds = int(matched["seeds"].iloc[0])
    return (f"; momentum against share, each against its own D-PSGD over {seeds} seeds"
            + (" (indicative)" if seeds < 3 else "") + ": " + ", ".join(parts))


def paper_vs_ours(t1, t2, sweep_frame, published: dict, horizon: float, trigger=None,
                  length=None, fractions=None, heartbeat=None,
                  dataset: str = "mnist", optimizer=None, slowed=None, norm_of=None, pinning=None,
                  matched=None) -> "pd.DataFrame":
    """The notebook's "paper vs ours" table: Table 1-2 at each ring size we ran, and the
    official MNIST claim; the "why" column quotes the sweep, the trigger ablation
    (``trigger_table``: the last row is the random trigger), the training-length study
    (``length_table``, over seeds) and the Top-K runs (``trigger_table`` rows D-PSGD, EventGraD, then Top-K without a trigger
    and by growing fraction), the Top-10% runs recording each norm (``paired_table``: the
    code's, then the copy's) and the heartbeat runs (``trigger_table`` rows D-PSGD,
    EventGraD, then each max_gap), the methods under two SGD settings
    (``optimizer_table``), D-PSGD slowed to each method's mean step share
    (``slowed_table``), and the causes over seeds (``causes.pinning_table``,
    ``causes.momentum_table``)."""
    import pandas as pd
    rows = []
    evidence = ""
    if trigger is not None:
        evidence += (f"; a random trigger at EventGraD's share ({trigger['% messages'].iloc[-1]:.1f}% of messages) "
                     f"trails by {trigger['gap to D-PSGD'].iloc[-1]:+.2f}, EventGraD by "
                     f"{trigger['gap to D-PSGD'].iloc[1]:+.2f} (one seed, indicative)")
    if heartbeat is not None:
        evidence += "; with a heartbeat (one seed, indicative): " + ", ".join(
            f"{label} {row['gap to D-PSGD']:+.2f} at {row['% messages']:.1f}%" for label, row in heartbeat.iloc[2:].iterrows())
    evidence += _length_why(length, "EventGraD") + _pinning_why(pinning)
    span = ((f"the horizon sets the share: across the sweep (one seed, indicative) {sweep_frame['% messages'].min():.1f}-"
             f"{sweep_frame['% messages'].max():.1f}% of messages with gaps {sweep_frame['gap to D-PSGD'].min():+.2f} "
             f"to {sweep_frame['gap to D-PSGD'].max():+.2f} points; " if sweep_frame is not None else
             "the horizon sweep was not run at this profile; ")
            + f"the paper's horizon was lost in extraction (we run {horizon:g}); " + ("the paper's CIFAR-10 setting, synchronous delivery" if dataset == "cifar10" else
                                 "CIFAR-10 / ResNet-18 is not run here, so model and data remain open as causes"))
    for k in t1.index:
        regular, event, pct = published["table1"].get(int(k), (None, None, None))
        rows.append({"quantity": f"{k} peers: % of messages, EventGraD (Table 1)", "paper": pct,
                     "ours": t1.loc[k, "% messages"], "why": span})
        rows.append({"quantity": f"{k} peers: accuracy gap, EventGraD - D-PSGD (Table 1, points)",
                     "paper": None if regular is None else event - regular,
                     "ours": t1.loc[k, "gap (EventGraD - D-PSGD)"],
                     "why": (f"messages buy accuracy along the sweep; closest to the paper's share: "
                             f"{_closest(sweep_frame, pct or 43.0)}" if sweep_frame is not None else "no sweep run")
                            + evidence
                            + _optimizer_evidence(optimizer, "EventGraD") + _momentum_why(matched)
                            + _slowed_why(slowed, "EventGraD")})
    for k in t2.index:
        acc, msgs, comm = published["table2"].get(int(k), (None, None, None))
        regular = published["table1"].get(int(k), (None,))[0]
        ours_msgs, ours_comm = t2.loc[k, "% messages"], t2.loc[k, "% communication (elements)"]
        rows.append({"quantity": f"{k} peers: % communication, Top-10% (Table 2)", "paper": comm, "ours": ours_comm,
                     "why": f"the paper's 2 x 10% x % messages assumes every tensor fires equally often: ours "
                            f"{ours_msgs:.1f}% of messages x 0.2 = {0.2 * ours_msgs:.2f}%, but large tensors fire "
                            f"more often than small ones, so weighted by size {ours_comm / 0.2:.1f}% of the elements "
                            f"moved (per-tensor table; every tensor here has a multiple of 10 entries, so k rounds "
                            f"nothing); the wire with framing: {t2.loc[k, '% communication (wire bytes)']:.2f}%"})
        rows.append({"quantity": f"{k} peers: accuracy gap, Top-10% - D-PSGD (Table 2, points)",
                     "paper": None if acc is None else acc - regular, "ours": t2.loc[k, "gap to D-PSGD"],
                     "why": _topk_why(fractions, ours_msgs, msgs, length, norm_of)
                            + _optimizer_evidence(optimizer, "EventGraD Top-10%")
                            + _slowed_why(slowed, "EventGraD Top-10%")})
    rows.append({"quantity": "MNIST: % of messages saved at 4 peers (official README)",
                 "paper": published["mnist_messages_saved"], "ours": 100.0 - t1.loc[t1.index[0], "% messages"],
                 "why": "the README gives no horizon, ring size or accuracy; " + span.split(";")[0]})
    return pd.DataFrame(rows).set_index("quantity")


def share_after_forced(result, forced: int) -> float:
    """The share of tensors sent per iteration after the forced iterations (the ``ring_sent``
    statistic of each step), the probability a random trigger needs to send as much."""
    shares = [v for v in result.metrics[f"{PHASE}_sent"][forced:] if v is not None]
    return float(np.mean(shares))


def accuracy_by_epoch(results) -> np.ndarray:
    """Test accuracy (%) at each epoch's evaluation, mean over ``results`` (seeds)."""
    curves = [[100.0 * a for a in r.metrics["test_accuracy"] if a is not None] for r in results]
    return np.mean(np.array(curves), axis=0)


def trigger_table(results: dict, dpsgd) -> "pd.DataFrame":
    """{label: result} against D-PSGD (same seed and length): accuracy, gap, % messages."""
    import pandas as pd
    return pd.DataFrame({label: {"accuracy": accuracy(r), "gap to D-PSGD": accuracy(r) - accuracy(dpsgd),
                                 "% messages": messages_pct(r, dpsgd)} for label, r in results.items()}).T


def optimizer_table(settings: dict) -> "pd.DataFrame":
    """{SGD setting: {method label: result}} (each with its own D-PSGD) -> per method and
    setting the accuracy, the gap to that setting's D-PSGD, % messages and % communication."""
    import pandas as pd
    columns = {}
    for name, group in settings.items():
        dpsgd = group["D-PSGD"]
        columns[f"accuracy, {name}"] = {label: accuracy(r) for label, r in group.items()}
        columns[f"gap, {name}"] = {label: accuracy(r) - accuracy(dpsgd) for label, r in group.items()}
        columns[f"% messages, {name}"] = {label: messages_pct(r, dpsgd) for label, r in group.items()}
        columns[f"% communication, {name}"] = {label: communication_pct(r, dpsgd) for label, r in group.items()}
    return pd.DataFrame(columns)


def step_share(result) -> float:
    """The fraction of its summed gradient steps that the peers' mean model travelled over
    the run (``algorithms/mean_motion.py``): 1 for D-PSGD; below 1 when copies that lag
    their senders pull the mean back."""
    shares = result.metrics.get("mean_step_share")
    if not shares:
        raise ValueError("the run has no mean_step_share: it is measured where one process holds every peer")
    return float(shares[-1])


def slowed_lr(result, dpsgd) -> float:
    """D-PSGD's lr times ``result``'s mean step share, to 4 significant digits: the step a
    D-PSGD needs to move its mean model as far as ``result``'s moved."""
    return float(f"{dpsgd.config.lr * step_share(result):.4g}")


def slowed_table(methods: dict, slowed: dict, dpsgd) -> "pd.DataFrame":
    """{label: result} and {label: D-PSGD at ``slowed_lr`` of that result} against full-step
    D-PSGD (same seed and length): each method's mean step share, its accuracy and gap, and
    the slowed D-PSGD's accuracy and gap. If the slowed D-PSGD trails as much as the method,
    the method's gap is that of a shorter step of the mean model."""
    import pandas as pd
    rows = {}
    for label, r in methods.items():
        slow = slowed[label]
        rows[label] = {"mean step share": step_share(r), "accuracy": accuracy(r),
                       "gap to D-PSGD": accuracy(r) - accuracy(dpsgd), "D-PSGD at lr x share: lr": slow.config.lr,
                       "accuracy, D-PSGD at lr x share": accuracy(slow),
                       "gap, D-PSGD at lr x share": accuracy(slow) - accuracy(dpsgd)}
    return pd.DataFrame(rows).T
