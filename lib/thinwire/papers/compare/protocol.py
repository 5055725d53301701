"""One optimizer protocol for every method: the comparison as a controlled experiment.

Each paper tunes its own optimizer: MQGrad's server steps at lr 0.2 with L2 0.00175,
EventGraD at 0.05, gradient dropping with AdaGrad at 0.005, Oland & Raj decay the lr by
0.95 an epoch with L1 1e-5. A comparison that keeps them compares optimizers as much as
messages. Here:

1. ``shared``: every method's optimizer is plain SGD at a constant lr, without momentum,
   weight decay, L1 or decay (each field its algorithm has; what makes the method, its
   codecs, policies, schedule and warm-up, stays);
2. ``tuning_configs``: every method on each lr of the profile's grid (at least 4 values, a
   factor 2 apart, around the fp16 all-reduce's best), on ``TUNING_SEED``, a seed the
   evaluation does not use;
3. ``best_lrs``: each method's lr of highest final test accuracy on that seed (the smaller
   lr on a tie); ``at_edge`` names those whose best is the grid's end;
4. ``evaluation_configs``: the evaluation seeds run every method at the fp16 all-reduce's
   best lr (the same-lr table: no method differs in optimizer or lr) and at its own best
   (one run where the two coincide);
5. ``paper_configs``: a paper's own setting (its recipe as published), where it is neither
   of those, is a labelled extra row, ``PAPERS_OWN`` after its label.
"""

from __future__ import annotations

import dataclasses

from ...experiment import RunConfig
from ..recipe import Recipe
from .methods import FP16_ALLREDUCE, FROM_PAPERS

# the shared optimizer: each field where the method's algorithm has it
SHARED = {"optimizer": "sgd", "momentum": 0.0, "weight_decay": 0.0, "lr_decay": 1.0, "l1": 0.0}
TUNING_SEED = 1000
PAPERS_OWN = " (paper's optimizer)"


def section_fields(algorithm: str) -> set[str]:
    """The fields of ``algorithm``'s section."""
    return {f.name for f in dataclasses.fields(RunConfig(algorithm).section)}


def shared(recipe: Recipe, lr: float) -> Recipe:
    """``recipe`` with the shared optimizer at ``lr`` (step 1)."""
    fields = section_fields(recipe.algorithm)
    settings = {**recipe.settings, **{k: v for k, v in SHARED.items() if k in fields}, "lr": float(lr)}
    return Recipe(recipe.label, recipe.algorithm, settings, recipe.paper)


def optimizer_of(config: RunConfig) -> str:
    """One line: the optimizer and lr a config trains with (each row states its own)."""
    section = config.section
    name = getattr(section, "optimizer", "sgd")
    parts = [f"{name} lr {section.lr:g}"]
    for field, label in (("momentum", "momentum"), ("weight_decay", "weight decay"), ("l1", "L1")):
        value = getattr(section, field, 0.0)
        if value:
            parts.append(f"{label} {value:g}")
    if getattr(section, "lr_decay", 1.0) != 1.0:
        parts.append(f"lr x {section.lr_decay:g} per epoch")
    return ", ".join(parts)


def check_grid(lrs) -> tuple[float, ...]:
    """At least 4 positive lrs, each twice the one before (``ValueError`` naming them)."""
    lrs = tuple(float(v) for v in lrs)
    positive = bool(lrs) and min(lrs) > 0
    if len(lrs) < 4 or not positive or not all(abs(b / a - 2.0) < 1e-9 for a, b in zip(lrs, lrs[1:])):
        raise ValueError(f"lr_grid={lrs!r} is not allowed: it must hold at least 4 positive lrs, each twice the "
                         "one before")
    return lrs


def tuning_configs(recipes: dict[str, Recipe], common: dict, lrs, seed: int = TUNING_SEED
                   ) -> dict[tuple[str, float], RunConfig]:
    """(method, lr) -> config: every method at every lr of the grid, on the tuning seed (step 2)."""
    return {(label, lr): shared(recipe, lr).apply(common, seed=seed)
            for label, recipe in recipes.items() for lr in check_grid(lrs)}


def best_lrs(tuning: dict[tuple[str, float], object]) -> dict[str, float]:
    """method -> the lr whose run (a Result) ended with the highest test accuracy (step 3);
    a run with no accuracy (diverged) counts as 0, and a tie takes the smaller lr."""
    best: dict[str, tuple[float, float]] = {}
    for (label, lr), result in sorted(tuning.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        accuracy = result.summary.get("final_accuracy")
        accuracy = 0.0 if accuracy is None or accuracy != accuracy else float(accuracy)
        if label not in best or accuracy > best[label][1]:
            best[label] = (lr, accuracy)
    return {label: lr for label, (lr, _) in best.items()}


def at_edge(best: dict[str, float], lrs) -> list[str]:
    """The methods whose best lr is the grid's smallest or largest: their best may lie outside."""
    lrs = check_grid(lrs)
    return [label for label, lr in best.items() if lr in (lrs[0], lrs[-1])]


def evaluation_configs(recipes: dict[str, Recipe], common: dict, best: dict[str, float], seeds
                       ) -> tuple[dict[tuple[str, int], RunConfig], dict[tuple[str, int], RunConfig]]:
    """(same lr, own lr): (method, seed) -> config at the fp16 all-reduce's best lr, and at
    the method's own best (step 4)."""
    baseline = best[FP16_ALLREDUCE]
    same = {(label, s): shared(recipe, baseline).apply(common, seed=s) for label, recipe in recipes.items()
            for s in seeds}
    own = {(label, s): shared(recipe, best[label]).apply(common, seed=s) for label, recipe in recipes.items()
           for s in seeds}
    return same, own


def paper_configs(recipes: dict[str, Recipe], common: dict, best: dict[str, float], seeds
                  ) -> dict[tuple[str, int], RunConfig]:
    """(method + ``PAPERS_OWN``, seed) -> config: each paper's method (``FROM_PAPERS``) as its
    paper sets it, where that is neither of its evaluated configs (step 5)."""
    baseline, out = best[FP16_ALLREDUCE], {}
    for label, recipe in recipes.items():
        if label not in FROM_PAPERS:
            continue
        evaluated = {shared(recipe, lr).apply(common).key() for lr in (baseline, best[label])}
        if recipe.apply(common).key() in evaluated:
            continue  # its paper's setting is one of the tables' rows
        for s in seeds:
            out[(label + PAPERS_OWN, s)] = recipe.apply(common, seed=s)
    return out
