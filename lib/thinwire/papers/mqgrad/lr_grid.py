"""One learning rate for every method: the grid the profile's lr is chosen from.

The paper runs every method at the server's lr 0.2 and says nothing of how it was chosen.
Here every method (Fix(2), Fix(4), Fix(8), Adaptive, MQGrad) runs each lr of the profile's
``lr_grid`` on a tuning seed the tables do not use (``runs.TUNING_SEED``); the chosen lr is
the one with the best mean final accuracy over the methods, so that no method's own best
decides it, and the baselines run at MQGrad's lr.
"""

from __future__ import annotations

import numpy as np

from ...experiment import measures
from .runs import LABELS


def lr_table(grid: dict) -> "pd.DataFrame":
    """{(label, lr): result} -> per lr (rows, ascending) each method's final test accuracy (%)
    and their mean."""
    import pandas as pd
    lrs = sorted({lr for _, lr in grid})
    frame = pd.DataFrame({label: [100.0 * measures.final_accuracy(grid[(label, lr)]) for lr in lrs]
                          for label in LABELS if (label, lrs[0]) in grid}, index=pd.Index(lrs, name="lr"))
    frame["mean over methods"] = frame.mean(axis=1)
    return frame


def chosen_lr(table) -> float:
    """The lr of ``lr_table`` (or its quoted copy) with the best mean final accuracy over the
    methods; the smaller lr on a tie."""
    means = np.asarray(table["mean over methods"], dtype=float)
    return float(np.asarray(table.index, dtype=float)[int(np.argmax(means))])


def at_edge(table) -> bool:
    """Whether the chosen lr is the grid's smallest or largest: the best may lie outside it."""
    lrs = sorted(float(lr) for lr in table.index)
    return chosen_lr(table) in (lrs[0], lrs[-1])
