"""The comparison's configs: every method of ``methods.py`` on one model, data set and number
of workers, from the same seeds (batch 32 per worker)."""

from __future__ import annotations

from ...experiment import RunConfig
from ..profile import check_profile, check_steps
from .methods import compare_recipes
from .profiles import COMPARE


def compare_configs(*, profile: str, dataset: str = "mnist", model: str = "", workers: int = 4,
                    methods: tuple[str, ...] = (), seeds: tuple[int, ...] = (), device: str = "auto",
                    steps: int = 0) -> dict[tuple[str, int], RunConfig]:
    """(method, seed) -> validated RunConfig; ``model`` "" and ``seeds`` () take the profile's;
    ``steps`` > 0 caps every run's length."""
    size = dict(COMPARE[check_profile(profile)])
    size.pop("netcheck")
    seeds = tuple(seeds) or size.pop("seeds")
    size.pop("seeds", None)
    if not seeds or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in seeds):
        raise ValueError(f"seeds={seeds!r} is not allowed: it must be non-negative ints (or () for the profile's)")
    if check_steps(steps):
        size["steps"], size["eval_every"] = min(size["steps"], steps), min(size["eval_every"], steps)
    size["model"] = model or size["model"]
    common = dict(dataset=dataset, workers=workers, batch_size=32, device=device, **size)
    return {(label, seed): recipe.apply(common, seed=seed)
            for label, recipe in compare_recipes(tuple(methods)).items() for seed in seeds}
