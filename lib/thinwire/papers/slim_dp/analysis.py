"""The numbers the Slim-DP notebook reports, computed from results (tested).

Saved bytes: 1 - payload(method) / payload(Plump-DP), pushes and pulls, every round (key
refreshes included). Saved communication time: the communication the network model gives
for the run's ledger plus the measured time of the codec work, against the same for
Plump-DP (whose codec work is copying and checksumming), under two accountings
(``ACCOUNTINGS``):

- ``ours``: every codec second the round kit measured: Quant-DP's encoding and decoding;
  Slim-DP's index generation (the core's top-k every q rounds and the explorer's sampling,
  the round kit's ``select`` part), extraction, encoding, decoding and merging.
- ``paper``: Sec. 3.4.2 holds that index generation "is not extra time" (it overlaps with
  computation) and Sec. 4.3.1 counts "the extra time to extract parameters/updates": the
  same, less the ``select`` part. Quant-DP and Plump-DP select nothing, so only Slim-DP's
  time changes.

Speed (Fig. 2): images / (measured compute, codec included + modelled communication).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ...experiment import measures
from .runs import PLUMP, QUANT

if TYPE_CHECKING:
    import pandas as pd

LAST = 3  # evaluations averaged for a run's final accuracy
ACCOUNTINGS = ("ours", "paper")


def codec_time(result, accounting: str = "ours") -> float:
    """Measured codec seconds: all of them (``ours``), or less index generation (``paper``)."""
    if accounting not in ACCOUNTINGS:
        raise ValueError(f"accounting={accounting!r} is not allowed: accounting must be one of {list(ACCOUNTINGS)}")
    whole = measures.codec_seconds(result)
    return whole if accounting == "ours" else whole - measures.codec_seconds(result, part="select")


def saved_bytes(result, plump) -> float:
    """1 - payload(method) / payload(Plump-DP), pushes and pulls, every round."""
    return 1.0 - measures.payload(result) / measures.payload(plump)


def saved_time_column(network: str, accounting: str = "ours") -> str:
    """Table 1's column of the saved time on ``network`` under ``accounting``."""
    return f"saved time {network}" + (", paper's accounting" if accounting == "paper" else "")


def communication_time(result, network: str, codec: bool = True, accounting: str = "ours") -> float:
    """Table 1's communication time: transfer priced on ``network`` + (``codec``) measured
    codec work under ``accounting``."""
    return measures.priced_seconds(result, network) + (codec_time(result, accounting) if codec else 0.0)


def saved_time(result, plump, network: str, codec: bool = True, accounting: str = "ours") -> float:
    return 1.0 - (communication_time(result, network, codec, accounting)
                  / communication_time(plump, network, codec, accounting))


def final_accuracy(result) -> float:
    """Mean test accuracy over the last ``LAST`` evaluations."""
    return measures.final_accuracy(result, LAST)


def _spread(values) -> tuple[float, float]:
    values = np.asarray(values, dtype=float)
    return float(values.mean()), float(values.std(ddof=1)) if values.size > 1 else 0.0


def ran_at(results: dict, k: int, seeds, methods) -> list[str]:
    """The methods of ``methods`` that ran at K = ``k`` (``runs.methods_at``)."""
    return [m for m in methods if (k, m, seeds[0]) in results]


def table1(results: dict, workers, seeds, methods, networks) -> pd.DataFrame:
    """Table 1 analogue from ``{(K, method, seed): Result}``: per (K, method) the final
    accuracy (mean and standard deviation over seeds; the gap to Plump-DP is the mean of the
    per-seed differences), saved bytes, and saved communication time on each network with
    codec time counted (ours, then the paper's accounting: index generation left out), and
    on the first without it (bytes alone)."""
    import pandas as pd
    rows = {}
    for k in workers:
        for method in ran_at(results, k, seeds, methods):
            runs = [results[(k, method, s)] for s in seeds]
            plumps = [results[(k, PLUMP, s)] for s in seeds]
            accuracy, spread = _spread([final_accuracy(r) for r in runs])
            row = {"accuracy": accuracy, "accuracy sd": spread,
                   "gap to Plump-DP": float(np.mean([final_accuracy(r) - final_accuracy(p)
                                                     for r, p in zip(runs, plumps)])),
                   "saved bytes": float(np.mean([saved_bytes(r, p) for r, p in zip(runs, plumps)]))}
            for accounting in ACCOUNTINGS:
                for network in networks:
                    row[saved_time_column(network, accounting)] = float(np.mean(
                        [saved_time(r, p, network, accounting=accounting) for r, p in zip(runs, plumps)]))
            row[f"saved time {networks[0]}, bytes only"] = float(np.mean(
                [saved_time(r, p, networks[0], codec=False) for r, p in zip(runs, plumps)]))
            row["codec ms/round"] = 1e3 * float(np.mean([measures.codec_seconds(r) / r.config.steps for r in runs]))
            row["index generation ms/round"] = 1e3 * float(np.mean(
                [measures.codec_seconds(r, part="select") / r.config.steps for r in runs]))
            rows[(k, method)] = row
    table = pd.DataFrame(rows).T
    table.index.names = ["K", "method"]
    return table


def speed_table(results: dict, workers, seeds, methods, networks) -> pd.DataFrame:
    """Fig. 2 analogue: images/s relative to Plump-DP (mean over seeds) per network."""
    import pandas as pd
    rows = {}
    for k in workers:
        for method in ran_at(results, k, seeds, methods):
            rows[(k, method)] = {network: float(np.mean([
                measures.images_per_second(results[(k, method, s)], network)
                / measures.images_per_second(results[(k, PLUMP, s)], network)
                for s in seeds])) for network in networks}
    table = pd.DataFrame(rows).T
    table.index.names = ["K", "method"]
    return table


def ordering(table, network: str, accounting: str = "ours") -> dict[int, dict]:
    """Per K: Slim-DP's and Quant-DP's saved time on ``network`` (codec counted under
    ``accounting``) and which saves more, for every Slim-DP setting in ``table``."""
    column = saved_time_column(network, accounting)
    out = {}
    for k in table.index.get_level_values("K").unique():
        quant = float(table.loc[(k, QUANT), column])
        slims = {m: float(table.loc[(k, m), column])
                 for m in table.loc[k].index if m.startswith("Slim-DP")}
        out[int(k)] = {"Quant-DP": quant, **slims,
                       "Slim-DP ahead": {m: v > quant for m, v in slims.items()}}
    return out


def ordering_table(table, networks) -> pd.DataFrame:
    """``ordering`` as one table: per accounting, network, K and Slim-DP setting, its saved
    time, Quant-DP's, and which is ahead."""
    import pandas as pd
    rows = {}
    for accounting in ACCOUNTINGS:
        for network in networks:
            for k, row in ordering(table, network, accounting).items():
                for method, ahead in row["Slim-DP ahead"].items():
                    rows[(accounting, network, k, method)] = {"Slim-DP saved time": row[method],
                                                              "Quant-DP saved time": row["Quant-DP"],
                                                              "ahead": "Slim-DP" if ahead else "Quant-DP"}
    out = pd.DataFrame(rows).T
    out.index.names = ["accounting", "network", "K", "method"]
    return out


def break_even_codec_ms(results: dict, k: int, seeds, method: str, network: str) -> float:
    """The codec time per round (ms) at which Quant-DP would save as much communication
    time on ``network`` as ``method`` does at K = ``k`` (means over seeds): below it
    Quant-DP is ahead. Quant-DP's measured transfer is kept; only its codec time varies."""
    plump = [results[(k, PLUMP, s)] for s in seeds]
    quant = [results[(k, QUANT, s)] for s in seeds]
    slim = [results[(k, method, s)] for s in seeds]
    total_plump = np.mean([communication_time(r, network) for r in plump])
    target = np.mean([saved_time(r, p, network) for r, p in zip(slim, plump)])
    transfer = np.mean([measures.priced_seconds(r, network) for r in quant])
    return float(1e3 * ((1 - target) * total_plump - transfer) / quant[0].config.steps)


def sweep_table(results: dict, plump, label: str) -> pd.DataFrame:
    """A sweep ``{value: Result}``: final accuracy, the lowest and the last training loss,
    saved bytes against ``plump`` (same K and seed) and the push density."""
    import pandas as pd
    rows = {}
    for value, r in results.items():
        losses = [v for v in r.metrics["loss"] if v is not None]
        rows[value] = {"accuracy": final_accuracy(r), "gap to Plump-DP": final_accuracy(r) - final_accuracy(plump),
                       "final train loss": r.summary["final_train_loss"], "lowest train loss": float(min(losses)),
                       "saved bytes": saved_bytes(r, plump), "push density": r.summary["push_density"]}
    table = pd.DataFrame(rows).T
    table.index.name = label
    return table


def refresh_words(alpha: float, epsilon: float, q: int) -> float:
    """Words per round relative to Plump-DP with the key cache: (alpha + epsilon) + the core's
    keys every q rounds, (alpha - epsilon) / q (Sec. 3.4.1 leaves the refresh out)."""
    return alpha + epsilon + (alpha - epsilon) / q


def refresh_table(results: dict, plump) -> pd.DataFrame:
    """The key-cache refresh sweep ``{q: Result}``: measured saved bytes, the formula's with
    and without the refresh cost, and the share of bytes the refreshes take."""
    import pandas as pd
    rows = {}
    for q, r in results.items():
        section = r.config.section
        rows[q] = {"saved bytes": saved_bytes(r, plump),
                   "formula, refresh counted": 1 - refresh_words(section.alpha, section.epsilon, q),
                   "formula, paper (no refresh)": 1 - (section.alpha + section.epsilon),
                   "refresh share of bytes": (section.alpha - section.epsilon) / q
                   / refresh_words(section.alpha, section.epsilon, q),
                   "accuracy": final_accuracy(r), "gap to Plump-DP": final_accuracy(r) - final_accuracy(plump)}
    table = pd.DataFrame(rows).T
    table.index.name = "q"
    return table


def ablation_table(results: dict) -> pd.DataFrame:
    """The gap ablation from ``{(label, "slim" | "plump", i): Result}``: each Slim-DP run
    against the Plump-DP run trained alike (same rounds, seed and reading of the learning
    rate); a label run on several seeds (i) reports means over them and the standard error
    of the per-seed gaps (``gap se``)."""
    import pandas as pd
    rows = {}
    for label in dict.fromkeys(key[0] for key in results):
        pairs = [(results[key], results[(label, "plump", key[2])]) for key in results
                 if key[0] == label and key[1] == "slim"]
        slim = [final_accuracy(s) for s, _ in pairs]
        plump = [final_accuracy(p) for _, p in pairs]
        gaps = np.subtract(slim, plump)
        rows[label] = {"rounds": pairs[0][0].config.steps, "seeds": len(pairs),
                       "Slim-DP accuracy": float(np.mean(slim)), "Plump-DP accuracy": float(np.mean(plump)),
                       "gap": float(np.mean(gaps)),
                       "gap se": float(np.std(gaps, ddof=1) / np.sqrt(len(gaps))) if len(gaps) > 1 else float("nan"),
                       "saved bytes": float(np.mean([saved_bytes(s, p) for s, p in pairs]))}
    table = pd.DataFrame(rows).T
    table.index.name = "Slim-DP (0.3, 0.15), K = 4"
    return table


def elias_table(elias: dict, headline: dict, seed: int) -> pd.DataFrame:
    """Quant-DP's messages in QSGD's own Elias coding against the fixed-width codes:
    ``elias`` is ``{K: Result}`` of the first rounds of the seed-``seed`` Quant-DP run with
    ``coding='elias'``; the fixed-width run and Plump-DP are that seed's headline runs,
    counted over the same first rounds. The coding is lossless, so the two Quant-DP runs
    train alike (``same losses``)."""
    import pandas as pd
    rows = {}
    for k, coded in elias.items():
        fixed, plump = headline[(k, QUANT, seed)], headline[(k, PLUMP, seed)]
        rounds = coded.config.steps

        def first(result):
            return measures.payload(result) - measures.payload(result, start=rounds)
        rows[k] = {"rounds": rounds, "same losses": coded.metrics["loss"] == fixed.metrics["loss"][:rounds],
                   "payload/round fixed-width": first(fixed) / rounds, "payload/round Elias": first(coded) / rounds,
                   "Elias / fixed-width": first(coded) / first(fixed),
                   "saved bytes fixed-width": 1 - first(fixed) / first(plump),
                   "saved bytes Elias": 1 - first(coded) / first(plump),
                   "codec ms/round fixed-width": 1e3 * measures.codec_seconds(fixed) / fixed.config.steps,
                   "codec ms/round Elias": 1e3 * measures.codec_seconds(coded) / rounds}
    table = pd.DataFrame(rows).T
    table.index.name = "K"
    return table


def scale_why(scale: pd.DataFrame | None, method: str, k: int, network: str) -> str:
    """What the codec-only measurement at the paper's sizes says about ``method`` against
    Quant-DP (``scale.scale_table``), or that it did not run."""
    if scale is None:
        return "Codec work at the paper's sizes was not measured in this run"
    ours, paper = f"saved K={k} {network}", f"saved K={k} {network}, paper's accounting"
    parts = []
    for size in scale.index.get_level_values("size").unique():
        row, quant = scale.loc[(size, method)], scale.loc[(size, QUANT)]
        parts.append(f"{size}: {row[ours]:.1%} ({row[paper]:.1%} without index generation) against Quant-DP's "
                     f"{quant[ours]:.1%}")
    return "Codec work alone on this CPU at other sizes (scale table), K = " + str(k) + ": " + "; ".join(parts)


def ablation_why(ablation: pd.DataFrame | None) -> str:
    """The gap ablation's rows in points, each with its standard error over seeds, or
    labelled indicative where it ran on fewer than three."""
    if ablation is None:
        return "The gap ablation did not run at this profile (-p studies True runs it)"
    parts = []
    for label, row in ablation.iterrows():
        seeds = int(row["seeds"])
        spread = (f"se {100 * row['gap se']:.2f}, {seeds} seeds" if seeds >= 3
                  else "one seed, indicative" if seeds == 1 else f"{seeds} seeds, indicative")
        parts.append(f"{label}: {100 * row['gap']:+.2f} ({spread})")
    return "Gap ablation in points at K = 4: " + "; ".join(parts)


def paper_vs_ours(table, refresh: pd.DataFrame | None, ablation: pd.DataFrame | None, epsilon: pd.DataFrame | None,
                  published: dict, network: str, q: int, break_even: dict[int, float],
                  scale: pd.DataFrame | None, rounds: int) -> pd.DataFrame:
    """The notebook's "paper vs ours" table: paper, ours, gap and why. Saved time is Table 1's
    (codec time counted) on ``network``; each "why" cites the run that measures the cause:
    the bytes (``refresh_table``), the measured codec time (``table1``), the codec time at
    which Quant-DP would fall behind Slim-DP (0.2, 0.1) (``break_even``: K -> ms per round,
    ``break_even_codec_ms``), the gap ablation (``ablation_table``) and the epsilon sweep
    (``sweep_table``), and the codec work at the paper's sizes (``scale``); ``rounds``: the
    headline runs' length. The studies
    (``refresh``, ``ablation``, ``epsilon``, ``scale``) are None where they neither ran nor were quoted;
    a cause measured on fewer than three seeds says so."""
    import pandas as pd
    from .runs import HEADLINE, slim_label
    paper, ours, why = {}, {}, {}
    col = saved_time_column(network)
    plump_ms = {k: float(table.loc[(k, PLUMP), "codec ms/round"]) for k in table.index.get_level_values("K").unique()}
    for model, (alpha, epsilon_) in published["settings"].items():
        method = slim_label(alpha, epsilon_)
        for k in plump_ms:
            row = table.loc[(k, method)]
            name = f"saved comm. time, {method} ({model}'s setting), K = {k}"
            paper[name], ours[name] = published["saved_time"][(model, "Slim-DP", k)], float(row[col])
            why[name] = (f"bytes saved: {row['saved bytes']:.1%} (the formula with the refresh every {q} rounds: "
                         f"{1 - refresh_words(alpha, epsilon_, q):.1%}); codec time {row['codec ms/round']:.2f} ms/round "
                         f"against Plump-DP's {plump_ms[k]:.2f}, of it {row['index generation ms/round']:.2f} index "
                         f"generation: bytes alone save {row[col + ', bytes only']:.1%}, without index generation (the "
                         f"paper's accounting) {row[saved_time_column(network, 'paper')]:.1%}. "
                         + scale_why(scale, method, k, network) + ". On the paper's GPUs: not measured")
    for k in plump_ms:
        row = table.loc[(k, QUANT)]
        for model in ("VGG-16", "GoogLeNet"):
            name = f"saved comm. time, Quant-DP (paper: {model}), K = {k}"
            paper[name], ours[name] = published["saved_time"][(model, "Quant-DP", k)], float(row[col])
            why[name] = (f"bytes saved {row['saved bytes']:.1%} (8 of 32 bits plus a norm per 512 values); "
                         f"QSGD costs {row['codec ms/round']:.2f} ms/round of codec time against Plump-DP's "
                         f"{plump_ms[k]:.2f}; bytes alone save {row[col + ', bytes only']:.1%}")
    vgg = slim_label(*published["settings"]["VGG-16"])
    for k in plump_ms:
        name = f"saved comm. time, {vgg} minus Quant-DP, K = {k}"
        paper[name] = (published["saved_time"][("VGG-16", "Slim-DP", k)]
                       - published["saved_time"][("VGG-16", "Quant-DP", k)])
        ours[name] = float(table.loc[(k, vgg), col] - table.loc[(k, QUANT), col])
        why[name] = (f"Quant-DP saves more bytes ({table.loc[(k, QUANT), 'saved bytes']:.1%} against "
                     f"{table.loc[(k, vgg), 'saved bytes']:.1%}), so Slim-DP is ahead only when QSGD's codec time is "
                     f"above {break_even[k]:.2f} ms/round; it measured {table.loc[(k, QUANT), 'codec ms/round']:.2f} "
                     "(one fused compiled pass here)")
    headline = slim_label(*HEADLINE)
    for k in plump_ms:
        name = f"accuracy, {headline} minus Plump-DP (points), K = {k}"
        paper[name] = published["top5"][("GoogLeNet", "Slim-DP", k)] - published["top5"][("GoogLeNet", "Plump-DP", k)]
        ours[name] = 100 * float(table.loc[(k, headline), "gap to Plump-DP"])
        why[name] = (f"top-1 on MNIST after {rounds} rounds here, top-5 on ImageNet at convergence there. "
                     + ablation_why(ablation))
    name = f"words per round / N, {headline}"
    paper[name] = HEADLINE[0] + HEADLINE[1]
    if refresh is not None and q in refresh.index:
        ours[name] = 1 - float(refresh.loc[q, "saved bytes"])
        at_one = f"; at q = 1 the ratio is {1 - float(refresh.loc[min(refresh.index), 'saved bytes']):.3f}"
    else:  # the refresh sweep neither ran nor was quoted: the headline run's bytes
        ours[name], at_one = 1 - float(table.loc[(min(plump_ms), headline), "saved bytes"]), ""
    why[name] = (f"the paper leaves out the core's keys, sent again every q = {q} rounds: "
                 f"(alpha - epsilon) / q = {(HEADLINE[0] - HEADLINE[1]) / q:.3f} N more" + at_one)
    if epsilon is not None:
        name = "epsilon = 0: accuracy minus Plump-DP (points)"
        paper[name], ours[name] = None, 100 * float(epsilon.loc[0.0, "gap to Plump-DP"])
        best = epsilon["accuracy"].idxmax()
        why[name] = (f"the paper: fails to converge. Here it trains, "
                     f"{'the worst' if epsilon['accuracy'].idxmin() == 0.0 else 'not the worst'} of the sweep; best "
                     f"epsilon {best:g} ({100 * float(epsilon.loc[best, 'gap to Plump-DP']):+.2f} points; one seed, "
                     "indicative)")
        alpha = HEADLINE[0]  # the sweep runs at the headline alpha (Fig. 4: 0.3)
        name = f"epsilon = alpha = {alpha:g}: accuracy minus Plump-DP (points)"
        paper[name] = None
        ours[name] = 100 * float(epsilon.loc[alpha, "gap to Plump-DP"]) if alpha in epsilon.index else None
        why[name] = ("not run" if ours[name] is None else
                     "the paper: \"slightly improves the performance of Plump-DP\" (Sec. 4.3.4, DropConnect as a "
                     f"regularizer, no number). Here it is {'above' if ours[name] > 0 else 'below'} Plump-DP, at the "
                     "epsilon sweep's rounds (one seed, indicative)")
    out = pd.DataFrame({"paper": pd.Series(paper, dtype=float), "ours": pd.Series(ours, dtype=float)})
    out["gap (ours - paper)"] = out["ours"] - out["paper"]
    out["why"] = pd.Series(why)
    return out
