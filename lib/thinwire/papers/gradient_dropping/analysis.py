"""The numbers the gradient-dropping notebook reports, computed from results (tested)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ...comm import network_preset

if TYPE_CHECKING:
    import pandas as pd


def total_payload(result) -> int:
    """Payload bytes over the whole run, pushes and pulls (self-addressed excluded): what
    the paper counts; the framing (headers, checksums) is ``summary["framing_bytes"]``."""
    return result.summary["push_payload"] + result.summary["pull_payload"]


def data_reduction(dense, sparse) -> float:
    """How many times fewer payload bytes ``sparse`` sent than ``dense`` over the same steps."""
    return total_payload(dense) / total_payload(sparse)


def modelled_images_per_second(result, network: str) -> float:
    """Measured compute + communication modelled on ``network`` (from the run's ledger)."""
    config = result.config
    comm = network_preset(network).seconds_per_step(result.ledger, config.steps).sum()
    images = config.workers * config.batch_size * config.steps
    return images / (result.summary["compute_seconds"] + comm)


def density_error(result, ratio: float) -> float:
    """|mean achieved push density - target| / target, over the run's pushes."""
    target = 1 - ratio
    return abs(result.summary["push_density"] - target) / target


def communication_share(result, network: str) -> float:
    """Modelled communication time / (compute + communication) on ``network``."""
    comm = network_preset(network).seconds_per_step(result.ledger, result.config.steps).sum()
    return float(comm / (result.summary["compute_seconds"] + comm))


def final_accuracy_window(result, evaluations: int = 3) -> float:
    """Mean test accuracy over the last ``evaluations`` evaluations (less noisy than the last one)."""
    values = [v for v in result.metrics["test_accuracy"] if v is not None]
    return float(np.mean(values[-evaluations:]))


def accuracy_gaps(dense, dropped: dict) -> pd.DataFrame:
    """Test-accuracy gap (dense - dropped) at every evaluation: rows are steps, columns the
    drop ratios (``{ratio: Result}``, ratio 0 skipped)."""
    import pandas as pd
    steps = [s + 1 for s, a in zip(dense.metrics["step"], dense.metrics["test_accuracy"]) if a is not None]
    gaps = pd.DataFrame({f"{ratio:.1%}": [b - d for b, d in zip(dense.metrics["test_accuracy"],
                                                                 r.metrics["test_accuracy"]) if b is not None]
                         for ratio, r in dropped.items() if ratio}, index=steps)
    gaps.index.name = "step"
    return gaps


def diagnosis_table(diagnosis: dict) -> pd.DataFrame:
    """The optimizer x pull ablation: ``{(optimizer, set-up): Result}`` with a
    ``(optimizer, "no dropping")`` reference per optimizer."""
    import pandas as pd
    rows = {}
    for (optimizer, setup), r in diagnosis.items():
        reference = diagnosis[(optimizer, "no dropping")]
        rows[(optimizer, setup)] = {
            "final accuracy": r.summary["final_accuracy"],
            "mean of last 3 evaluations": final_accuracy_window(r),
            "gap to no dropping (last 3)": final_accuracy_window(reference) - final_accuracy_window(r),
            "pull density": r.summary["pull_density"], "pull tied": r.summary["pull_tied"],
            "payload/step": r.summary["payload_per_step"],
        }
    table = pd.DataFrame(rows).T
    table.index.names = ["optimizer", "communication"]
    return table


def marian_table(marian: dict) -> pd.DataFrame:
    """Marian's settings one at a time and together: ``{(schedule, setting): Result}`` with a
    ``(schedule, "no dropping")`` reference per schedule. Densities and ties are means over
    the dropping steps (dense warm-up steps report none); payload/step counts every step."""
    import pandas as pd
    rows = {}
    for (schedule, setting), r in marian.items():
        reference = marian[(schedule, "no dropping")]
        warmup = r.config.section.warmup_steps
        rows[(schedule, setting)] = {
            "final accuracy": r.summary["final_accuracy"],
            "mean of last 3 evaluations": final_accuracy_window(r),
            "gap to no dropping (last 3)": final_accuracy_window(reference) - final_accuracy_window(r),
            "AdaGrad eps": f"{r.config.section.adagrad_eps:g}", "dense warm-up steps": warmup,
            "pull density": r.summary.get("pull_density"), "pull tied": r.summary.get("pull_tied"),
            "payload/step": r.summary["payload_per_step"],
            "payload/step after warm-up": float(sum(r.metrics["payload_bytes"][warmup:])
                                                / max(1, r.config.steps - warmup)),
        }
    table = pd.DataFrame(rows).T
    table.index.names = ["schedule", "setting"]
    return table


def paper_vs_ours(dense, drop99, dense_pulls, gaps, network: str, published: dict,
                  marian: pd.DataFrame | None = None) -> pd.DataFrame:
    """The notebook's "paper vs ours" table: paper, ours, gap, and why (each cause measured
    by a run named in it: the diagnosis runs for accuracy, the encodings for bytes, the
    network model for speed, ``marian_table`` for Marian's settings)."""
    import pandas as pd
    config = dense.config
    curve = gaps["99.0%"].to_numpy()
    half = max(1, len(curve) // 2)
    epochs = config.steps * config.workers * config.batch_size / 60000
    ours = {
        "accuracy baseline": dense.summary["final_accuracy"],
        "accuracy 99% drop": drop99.summary["final_accuracy"],
        "data reduction 99% (offset-value)": data_reduction(dense, drop99),
        "speed-up 99% vs 0%": modelled_images_per_second(drop99, network) / modelled_images_per_second(dense, network),
    }
    theirs = {
        "accuracy baseline": published["accuracy_baseline"],
        "accuracy 99% drop": published["accuracy_drop99"],
        "data reduction 99% (offset-value)": published["data_reduction_99_offset_value"],
        "speed-up 99% vs 0%": published["images_per_second"][0.99] / published["images_per_second"][0.0],
    }
    dense_pull_gap = final_accuracy_window(dense) - final_accuracy_window(dense_pulls)
    why = {
        "accuracy baseline": f"{epochs:.2f} epochs and hidden {config.hidden[0]} here vs 20 epochs and 4096 in the "
                             f"paper",
        "accuracy 99% drop": f"our gap to the baseline averages {curve[:half].mean():+.3f} over the first half of the "
                             f"evaluations and {curve[-1]:+.3f} at the end. Cause (diagnosis above): under AdaGrad "
                             f"{drop99.summary['pull_tied']:.1%} of the pull deltas tie at the threshold (+-lr), the "
                             f"strict test drops them, and pulls carry {drop99.summary['pull_density']:.2%} of the "
                             f"values, not 1%. With dense pulls 99% ends {dense_pull_gap:+.3f} from the baseline "
                             f"(last 3 evaluations). Also {epochs:.2f} epochs here vs 20 in the paper",
        "data reduction 99% (offset-value)": "our offsets take ~1.3 bytes per survivor (a 4-byte value plus a gap "
                                             "byte, escapes for long gaps); the paper's 50x matches 8 bytes per "
                                             "survivor, which our index-value encoding gives; pulls of deltas can "
                                             "be sparser than 1%",
        "speed-up 99% vs 0%": f"communication is {communication_share(dense, network):.1%} of our modelled baseline "
                              f"step on {network} (paper: 41%): a 2-core CPU computes far slower than 4 GPUs, so "
                              "cutting bytes saves little, and dropping adds encode/decode compute",
    }
    if marian is not None:
        warmed = next(row for (schedule, setting), row in marian.iterrows()
                      if schedule == "sync" and "warm-up" in setting)
        full = marian.loc[("async", "99%, all three (Marian)")]
        name = "accuracy 99% drop, Marian's setting"
        ours[name], theirs[name] = full["final accuracy"], published["accuracy_drop99"]
        why["accuracy 99% drop"] += (f". Marian's {int(warmed['dense warm-up steps'])} dense warm-up steps alone leave "
                                     f"{warmed['pull tied']:.3%} tied, pulls at {warmed['pull density']:.2%}, and a gap "
                                     f"of {warmed['gap to no dropping (last 3)']:+.4f} (last 3)")
        why[name] = (f"asynchronous SGD, AdaGrad eps {full['AdaGrad eps']} and {int(full['dense warm-up steps'])} dense "
                     f"warm-up steps, as in Marian: {full['gap to no dropping (last 3)']:+.4f} behind the dense run of "
                     f"the same setting (last 3), whose own accuracy is "
                     f"{marian.loc[('async', 'no dropping'), 'final accuracy']:.4f}; {epochs:.2f} epochs here vs 20")
    table = pd.DataFrame({"paper": theirs, "ours": ours})
    table["gap (ours - paper)"] = table["ours"] - table["paper"]
    table["why"] = pd.Series(why)
    return table
