"""The numbers the Oland & Raj notebook reports, computed from results (tested)."""

from __future__ import annotations

import numpy as np


def bits_per_parameter(result) -> dict[str, np.ndarray]:
    """Per exchange: bits per parameter of one worker's transmission (8 x payload bytes /
    parameters, from the real messages; framing excluded, as in the paper): what was sent,
    and the probes (raw, huffman, ans)."""
    m = result.metrics
    params = np.array([v for v in m["parameters"] if v is not None], dtype=float)
    out = {}
    for key in [k for k in m if k.startswith("probe_payload/")]:
        out[key.split("/", 1)[1]] = np.array([v for v in m[key] if v is not None]) * 8 / params
    up = np.array(m["push_payload"], dtype=float)
    out["sent"] = up[up > 0] / result.config.workers * 8 / params
    return out


def accuracy_curve(result) -> np.ndarray:
    return np.array([a for a in result.metrics["test_accuracy"] if a is not None])


def epochs_to_peak(result) -> int:
    """Epoch (1-based) of the highest test accuracy: the paper's convergence measure (Fig. 4c, d)."""
    return int(np.argmax(accuracy_curve(result))) + 1


def epochs_to_plateau(result, tolerance: float = 0.001) -> int:
    """First epoch (1-based) whose test accuracy is within ``tolerance`` of the run's peak:
    the end of the climb, which single-evaluation noise on a flat plateau does not move the
    way it moves the argmax (``epochs_to_peak``)."""
    curve = accuracy_curve(result)
    return int(np.argmax(curve >= curve.max() - tolerance)) + 1


def layer_series(result, prefix: str) -> dict[str, np.ndarray]:
    """{tensor name: values per exchange} for metrics named ``prefix/<tensor>``."""
    m = result.metrics
    return {k.split("/", 1)[1]: np.array([v for v in m[k] if v is not None])
            for k in m if k.startswith(prefix + "/")}


def mean_final_accuracy(headline: dict, label: str, seeds) -> float:
    """Mean final test accuracy of setting ``label`` over ``seeds`` (``headline[(label, seed)]``)."""
    return float(np.mean([headline[(label, s)].summary["final_accuracy"] for s in seeds]))


def mean_epochs_to_peak(headline: dict, label: str, seeds) -> float:
    return float(np.mean([epochs_to_peak(headline[(label, s)]) for s in seeds]))


def epochs_to_peak_error(runs: dict, seeds) -> float | None:
    """The standard error of the seed-by-seed share of epochs to peak saved by c=6, M=4
    (1 - its epochs over the baseline's on the same seed); None below 2 seeds. The mean
    share within two of them is not resolved at this length."""
    if len(seeds) < 2:
        return None
    saved = [1 - epochs_to_peak(runs[("c=6, M=4", s)]) / epochs_to_peak(runs[("baseline", s)]) for s in seeds]
    return float(np.std(saved, ddof=1) / np.sqrt(len(saved)))


def mean_bit_rates(headline: dict, label: str, seeds) -> dict[str, np.ndarray]:
    """``bits_per_parameter`` per exchange, averaged over seeds."""
    per_seed = [bits_per_parameter(headline[(label, s)]) for s in seeds]
    return {k: np.mean([r[k] for r in per_seed], axis=0) for k in per_seed[0]}


def paper_vs_ours(headline: dict, seeds, published: dict, longer: dict | None = None):
    """The notebook's "paper vs ours" table (Sec. 5.1-5.2 numbers), bits from payload.
    ``longer`` (``{(label, seed): Result}``, longer runs) measures epochs to peak, which the
    profile's runs, peaking at their last epoch, cannot: without it the row is NaN."""
    import pandas as pd
    c5, c6 = mean_bit_rates(headline, "c=5, M=4", seeds), mean_bit_rates(headline, "c=6, M=4", seeds)
    fp32_bits = float(np.mean(mean_bit_rates(headline, "baseline", seeds)["sent"]))
    final = {label: mean_final_accuracy(headline, label, seeds) for label in ("baseline", "c=5, M=4", "c=6, M=4",
                                                                               "fixed 8 bits")}
    ours = {
        "bits/param raw, c=5 M=4": c5["raw"].mean(),
        "compression raw, c=5 M=4": fp32_bits / c5["raw"].mean(),
        "bits/param Huffman, c=5 M=4": c5["sent"].mean(),
        "compression Huffman, c=5 M=4": fp32_bits / c5["sent"].mean(),
        "bits/param Huffman, c=6 M=4": c6["sent"].mean(),
        "compression Huffman, c=6 M=4": fp32_bits / c6["sent"].mean(),
        "bits/param ANS, c=5 M=4": c5["ans"].mean(),
        "accuracy baseline": final["baseline"],
        "accuracy c=5 M=4": final["c=5, M=4"],
        "accuracy c=6 M=4": final["c=6, M=4"],
        "accuracy fixed 8 bits": final["fixed 8 bits"],
        "fewer epochs to peak, c=6 M=4": float("nan"),  # the profile's runs peak at their last epoch
    }
    if longer:
        long_seeds = sorted(s for label, s in longer if label == "c=6, M=4")
        ours["fewer epochs to peak, c=6 M=4"] = 1 - mean_epochs_to_peak(longer, "c=6, M=4", long_seeds) \
            / mean_epochs_to_peak(longer, "baseline", long_seeds)
        se = epochs_to_peak_error(longer, long_seeds)
        ours[f"fewer epochs to peak, c=6 M=4: standard error ({len(long_seeds)} seeds)"] = se
    theirs = {
        "bits/param raw, c=5 M=4": published["bits_raw_c5m4"], "compression raw, c=5 M=4": published["compression_raw_c5m4"],
        "bits/param Huffman, c=5 M=4": published["bits_huffman_c5m4"],
        "compression Huffman, c=5 M=4": published["compression_c5m4"],
        "bits/param Huffman, c=6 M=4": published["bits_huffman_c6m4"],
        "compression Huffman, c=6 M=4": published["compression_c6m4"],
        "bits/param ANS, c=5 M=4": None, "accuracy baseline": None,
        "accuracy c=5 M=4": published["accuracy_c5m4_vs_baseline"] + " baseline",
        "accuracy c=6 M=4": published["accuracy_c6m4_vs_baseline"] + " to baseline",
        "accuracy fixed 8 bits": "= baseline", "fewer epochs to peak, c=6 M=4": published["fewer_epochs_to_peak_c6m4"],
    }
    theirs.update({k: None for k in ours if k not in theirs})
    table = pd.DataFrame({"paper": theirs, "ours": ours})
    table["gap (ours - paper)"] = [o - t if isinstance(t, float) else None for o, t in zip(table.ours, table.paper)]
    table["gap %"] = [100 * (o - t) / t if isinstance(t, float) else None for o, t in zip(table.ours, table.paper)]
    for label in ("c=5, M=4", "c=6, M=4", "fixed 8 bits"):
        table.loc[f"accuracy {label.replace(', ', ' ')} - baseline", "ours"] = final[label] - final["baseline"]
    return table


def l1_ablation(l1_runs: dict):
    """``{("baseline" | "c=5, M=4" [| "c=6, M=4"], strength): Result}`` -> one row per L1 strength."""
    import pandas as pd
    rows = {}
    for strength in sorted({s for _, s in l1_runs}):
        plain, adapt = l1_runs[("baseline", strength)], l1_runs[("c=5, M=4", strength)]
        r = bits_per_parameter(adapt)
        first_layer = next(iter(layer_series(adapt, "entropy").values()))
        rows[strength] = {"H_M layer 1 (last epoch)": first_layer[-1], "raw bits": r["raw"].mean(),
                          "Huffman bits": r["sent"].mean(), "Huffman bits (last epoch)": r["sent"][-1],
                          "accuracy fp32": plain.summary["final_accuracy"],
                          "accuracy c=5 M=4": adapt.summary["final_accuracy"]}
        if (six := l1_runs.get(("c=6, M=4", strength))) is not None:
            rows[strength]["Huffman bits c=6"] = bits_per_parameter(six)["sent"].mean()
            rows[strength]["c=6 - c=5"] = rows[strength]["Huffman bits c=6"] - rows[strength]["Huffman bits"]
    table = pd.DataFrame(rows).T
    table.index.name = "L1 strength"
    return table


def mean_bit_width(result) -> float:
    """N averaged over the exchanges and weighted by each tensor's size: the paper's "raw"
    bits per parameter, fractional when the rule is (``rounding='fractional'``)."""
    from ...models import build_model
    config = result.config
    model = build_model(config.model, (1, 28, 28), 10, 0)
    sizes = {name: p.numel() for name, p in model.named_parameters()}
    widths = layer_series(result, "bits")
    return float(sum(sizes[n] * widths[n].mean() for n in widths) / sum(sizes[n] for n in widths))


def bit_rate_table(settings: dict, l1_runs: dict, published: dict):
    """One row per setting of the bit-rate experiments (``{(setting, label): Result}`` with
    labels baseline / c=5, M=4 / c=6, M=4, and the L1 ablation's runs as "L1 <strength>"):
    N (``mean_bit_width``, the paper's raw bits), the packed raw codes, Huffman bits at c=5,
    Huffman at c=6, the c=6 - c=5 increment, the accuracy gaps to the setting's own baseline,
    and the distance to the paper's (raw, Huffman c=5, Huffman c=6) triple: the largest of the
    three |ours - paper| / paper. ``matches accuracy``: both gaps within 0.5 points, and the
    setting's baseline no more than 0.5 points below the first setting's (the reference)."""
    import pandas as pd
    runs = dict(settings)
    known = {r.config.key() for r in settings.values()}
    repeated = {s for (label, s), r in l1_runs.items() if label == "c=5, M=4" and r.config.key() in known}
    for (label, strength), result in l1_runs.items():
        if strength not in repeated:  # the profile's own strength is a setting already
            runs[(f"L1 {strength:g}", label)] = result
    paper = (published["bits_raw_c5m4"], published["bits_huffman_c5m4"], published["bits_huffman_c6m4"])
    rows = {}
    names = list(dict.fromkeys(name for name, _ in runs))
    reference = runs[(names[0], "baseline")].summary["final_accuracy"]
    for setting in names:
        base, c5, c6 = (runs[(setting, label)] for label in ("baseline", "c=5, M=4", "c=6, M=4"))
        r5, r6 = bits_per_parameter(c5), bits_per_parameter(c6)
        ours = (mean_bit_width(c5), r5["sent"].mean(), r6["sent"].mean())
        gaps = [base.summary["final_accuracy"] - r.summary["final_accuracy"] for r in (c5, c6)]
        rows[setting] = {
            "raw bits c=5 (N)": ours[0], "packed codes c=5": r5["raw"].mean(), "Huffman bits c=5": ours[1],
            "Huffman bits c=6": ours[2], "c=6 - c=5": ours[2] - ours[1],
            "accuracy baseline": base.summary["final_accuracy"],
            "accuracy gap c=5": gaps[0], "accuracy gap c=6": gaps[1],
            "matches accuracy": bool(max(abs(g) for g in gaps) <= 0.005
                                     and base.summary["final_accuracy"] >= reference - 0.005),
            "distance to paper": max(abs(o - p) / p for o, p in zip(ours, paper)),
        }
    table = pd.DataFrame(rows).T
    table.index.name = "setting"
    return table


def setting_findings(table, published: dict, family_distance: float) -> list[str]:
    """One conclusion per experiment of ``bit_rate_table`` (each against the first row, the
    profile's setting), then whether any setting and whether the paper's own numbers hold
    together (``family_distance``: ``consistency.closest_to_paper``'s distance)."""
    reference = table.iloc[0]
    lines = []
    for name, row in table.iloc[1:].iterrows():
        accuracy = "within the accuracy criterion" if row["matches accuracy"] else (
            f"not within the accuracy criterion (baseline "
            f"{100 * (row['accuracy baseline'] - reference['accuracy baseline']):+.2f} points from the profile's, "
            f"c=6 {row['accuracy gap c=6'] * 100:+.2f} behind it)")
        lines.append(
            f"{name}: raw {row['raw bits c=5 (N)'] - reference['raw bits c=5 (N)']:+.2f}, Huffman c=5 "
            f"{row['Huffman bits c=5'] - reference['Huffman bits c=5']:+.2f} and c=6 "
            f"{row['Huffman bits c=6'] - reference['Huffman bits c=6']:+.2f} bits against the profile's setting; "
            f"c=6 - c=5 = {row['c=6 - c=5']:+.2f}; float32 baseline {row['accuracy baseline']:.4f}, c=5 "
            f"{row['accuracy gap c=5'] * 100:+.2f} points behind it; {accuracy}; "
            f"{row['distance to paper']:.0%} from the paper's triple.")
    best = best_match(table)
    increment = published["bits_huffman_c6m4"] - published["bits_huffman_c5m4"]
    lines.append(
        f"No setting gives ({published['bits_raw_c5m4']}, {published['bits_huffman_c5m4']}, "
        f"{published['bits_huffman_c6m4']}) at equal accuracy: the closest, {best}, is "
        f"{table.loc[best, 'distance to paper']:.0%} away. Each cause lowers the rate, but the c=6 - c=5 increment "
        f"stays at {table['c=6 - c=5'][table['matches accuracy'].astype(bool)].min():.2f} bits or more wherever "
        f"accuracy holds, against the paper's {increment:.2f}; only the strongest L1 gets near "
        f"{increment:.2f}, and it does so at {table['Huffman bits c=5'].min():.2f} bits, not "
        f"{published['bits_huffman_c5m4']}.")
    lines.append(
        f"The paper's own pair (Huffman {published['bits_huffman_c5m4']} at c=5, +{increment:.2f} at c=6) is "
        f"{family_distance:.0%} from the nearest weight density of the spike check: a small increment needs most "
        f"weights piled in bins that do not split, and those weights then cost about one bit, which leaves the "
        f"rate far below {published['bits_huffman_c5m4']}. Only weights sitting on a handful of exact values "
        f"(several spikes, each costing its own code) could give both; trained float weights show no such thing "
        f"here (the increments above). So the paper's three numbers do not hold together for weights shaped like "
        f"ours or like a spike plus a smooth density.")
    return lines


def best_match(table) -> str:
    """The setting closest to the paper's triple among those within 0.5 points of their baseline
    (closest overall when none is)."""
    eligible = table[table["matches accuracy"].astype(bool)]
    return str((eligible if len(eligible) else table)["distance to paper"].astype(float).idxmin())


def why_it_differs(headline: dict, seeds, l1_table, l1: float, epochs: int) -> list[str]:
    """The notebook's "why the numbers differ" findings, each computed from the runs: bit
    widths (entropy estimates), the L1 ablation, what the byte counts include, accuracy,
    epochs to peak, ANS vs Huffman."""
    first = headline[("c=5, M=4", seeds[0])]
    entropy, bits = layer_series(first, "entropy"), layer_series(first, "bits")
    c5 = mean_bit_rates(headline, "c=5, M=4", seeds)
    fp32_bits = float(np.mean(mean_bit_rates(headline, "baseline", seeds)["sent"]))
    final = {label: mean_final_accuracy(headline, label, seeds) for label in ("baseline", "c=5, M=4", "fixed 8 bits")}
    strongest = l1_table.index.max()
    framing = np.mean([headline[("c=5, M=4", s)].summary["framing_bytes"] / headline[("c=5, M=4", s)].summary["messages"]
                       for s in seeds])
    row = l1_table.loc
    return [
        f"Bit widths. With c=5, our largest layer's entropy estimate at M=4 averages "
        f"{next(iter(entropy.values())).mean():.2f} bits, so N averages {next(iter(bits.values())).mean():.2f}. The "
        f"paper's 6.8 raw bits at c=5 imply H of about 1.8 bits. The paper leaves open three things that shape the "
        f"weights: initialization, L1 strength, and 100 epochs of training (we train {epochs}). The L1 table above "
        f"tests the L1 strength. Huffman saves {1 - c5['sent'].mean() / c5['raw'].mean():.0%} of the raw bits here, "
        f"against the paper's {1 - 3.55 / 6.8:.0%}.",
        f"L1: raising the L1 strength from {l1:g} to {strongest:g} changes layer 1's last-epoch H_M from "
        f"{row[l1, 'H_M layer 1 (last epoch)']:.2f} to {row[strongest, 'H_M layer 1 (last epoch)']:.2f} bits and the "
        f"mean Huffman rate from {row[l1, 'Huffman bits']:.2f} to {row[strongest, 'Huffman bits']:.2f} bits/parameter. "
        f"Fp32 accuracy goes from {row[l1, 'accuracy fp32']:.4f} to {row[strongest, 'accuracy fp32']:.4f}.",
        f"Payload only: code tables and sync points are counted, as in the paper's package; the framing "
        f"({framing:.1f} bytes a message: header and checksum) is not. Float32 messages come to {fp32_bits:.3f} "
        f"bits/parameter.",
        f"Accuracy: the baseline reaches {final['baseline']:.4f} after {epochs} epochs; the paper trains 100. c=5 M=4 is "
        f"{final['baseline'] - final['c=5, M=4']:+.4f} behind it, and fixed 8 bits "
        f"{final['baseline'] - final['fixed 8 bits']:+.4f} behind.",
        f"Epochs to peak: with {epochs} epochs and a decaying learning rate, the peak is usually the last epoch "
        f"(baseline mean {mean_epochs_to_peak(headline, 'baseline', seeds):.1f}). Convergence speed-ups like the "
        f"paper's 20% are measured on the longer runs (section `Epochs to peak`).",
        f"ANS vs Huffman at c=5 M=4: {c5['ans'].mean():.3f} vs {c5['sent'].mean():.3f} bits/parameter. ANS avoids "
        f"Huffman's whole-bit code lengths; its table holds exact counts (1, 2 or 4 bytes a bin, the narrowest that "
        f"fits) where Huffman's holds 1-byte code lengths.",
    ]
