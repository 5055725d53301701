"""The comparison's configs: every method of ``methods.py`` on one model, data set and number
of workers, from the same seeds (batch 32 per worker), under one optimizer protocol
(``protocol.py``): a learning-rate grid on a tuning seed, then the evaluation seeds at the
fp16 all-reduce's best lr and at each method's own, and the papers' own settings as extra rows."""

from __future__ import annotations

from dataclasses import dataclass

from ...experiment import RunConfig
from ..profile import check_profile, check_steps
from ..recipe import Recipe
from . import protocol
from .methods import FP16_ALLREDUCE, compare_recipes
from .profiles import COMPARE


@dataclass(frozen=True)
class ComparePlan:
    """What the comparison runs: ``common`` fields, the ``recipes``, the ``lrs`` of the grid,
    the evaluation ``seeds``, the ``tuning_seed``, how many of the seeds the papers' own
    settings run on (``paper_seeds``) and the bandwidths the network model is checked at."""

    common: dict
    recipes: dict[str, Recipe]
    lrs: tuple[float, ...]
    seeds: tuple[int, ...]
    tuning_seed: int = protocol.TUNING_SEED
    paper_seeds: int = 3
    netcheck_rates: tuple[float, ...] = ()

    def tuning(self) -> dict[tuple[str, float], RunConfig]:
        """(method, lr) -> config on the tuning seed."""
        return protocol.tuning_configs(self.recipes, self.common, self.lrs, self.tuning_seed)

    def evaluation(self, best: dict[str, float]) -> tuple[dict, dict]:
        """(same lr, own lr) configs on the evaluation seeds, from ``best`` (method -> lr)."""
        return protocol.evaluation_configs(self.recipes, self.common, best, self.seeds)

    def papers(self, best: dict[str, float]) -> dict[tuple[str, int], RunConfig]:
        """The papers' own settings, where they are not evaluated already, on the first
        ``paper_seeds`` seeds."""
        return protocol.paper_configs(self.recipes, self.common, best, self.seeds[:self.paper_seeds])


def compare_plan(*, profile: str, dataset: str = "mnist", model: str = "", workers: int = 4,
                 methods: tuple[str, ...] = (), seeds: tuple[int, ...] = (), device: str = "auto",
                 steps: int = 0) -> ComparePlan:
    """The validated plan; ``model`` "", ``methods`` () and ``seeds`` () take the profile's
    (the fp16 all-reduce is always in); ``steps`` > 0 caps every run's length."""
    size = dict(COMPARE[check_profile(profile)])
    size.pop("netcheck")
    paper_seeds, rates = size.pop("paper_seeds"), tuple(size.pop("netcheck_rates"))
    lrs = protocol.check_grid(size.pop("lr_grid"))
    methods = tuple(methods) or size.pop("methods")
    size.pop("methods", None)
    if methods:
        methods = tuple(dict.fromkeys((FP16_ALLREDUCE, *methods)))
    seeds = tuple(seeds) or size.pop("seeds")
    size.pop("seeds", None)
    if not seeds or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in seeds):
        raise ValueError(f"seeds={seeds!r} is not allowed: it must be non-negative ints (or () for the profile's)")
    if protocol.TUNING_SEED in seeds:
        raise ValueError(f"seeds={seeds!r} is not allowed: {protocol.TUNING_SEED} is the tuning seed")
    if check_steps(steps):
        size["steps"], size["eval_every"] = min(size["steps"], steps), min(size["eval_every"], steps)
    size["model"] = model or size["model"]
    common = dict(dataset=dataset, workers=workers, batch_size=32, device=device, **size)
    RunConfig(**common)  # a bad common field fails here, naming it
    return ComparePlan(common, compare_recipes(methods), lrs, seeds, paper_seeds=min(paper_seeds, len(seeds)),
                       netcheck_rates=rates)


def compare_configs(**kwargs) -> dict[tuple[str, int], RunConfig]:
    """(method, seed) -> each method as its paper (or the baseline's recipe) sets it, on the
    plan's common fields (``compare_plan``'s arguments)."""
    plan = compare_plan(**kwargs)
    return {(label, seed): recipe.apply(plan.common, seed=seed)
            for label, recipe in plan.recipes.items() for seed in plan.seeds}
