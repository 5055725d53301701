"""Recipes: a paper's methods as data, applied to any shared set of common fields.

A recipe is a label, an algorithm and the settings of that algorithm's section that make
the method (Quant-DP is Plump-DP with ``qsgd`` pushes and pulls and delta pulls; gradient
dropping at 99% is the sharded server with ``graddrop`` codecs). ``apply`` puts it on
the common fields of any config (dataset, model, workers, steps, ...), so a comparison
across papers runs every paper's methods on one network and one data set without
retyping them:

    from thinwire.papers import paper
    common = RunConfig(model="mlp(hidden=(256,))", workers=8, steps=500)
    configs = {r.label: r.apply(common) for p in ("slim_dp", "gradient_dropping") for r in paper(p).recipes.values()}
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..experiment import RunConfig
from ..experiment.config import COMMON_FIELDS
from ..specs import pairs_tried_later


@dataclass(frozen=True)
class Recipe:
    label: str
    algorithm: str
    settings: dict = field(default_factory=dict)  # fields of the algorithm's section
    paper: str = ""                                # the package it comes from

    def __post_init__(self):
        common = sorted(set(self.settings) & set(COMMON_FIELDS))
        if common:
            raise ValueError(f"recipe {self.label!r}: settings {common} are common fields; a recipe holds only "
                             f"{self.algorithm}'s own")
        with pairs_tried_later():  # the codec-policy pairs when a config is made (apply)
            RunConfig(self.algorithm, **self.settings)  # a bad setting fails here, naming it

    def apply(self, common: RunConfig | dict, **overrides) -> RunConfig:
        """A config of this method on ``common``'s common fields (a config's section is
        dropped); ``overrides``: any field, common or of the section."""
        if isinstance(common, RunConfig):
            common = {k: getattr(common, k) for k in COMMON_FIELDS if k != "algorithm"}
        return RunConfig(self.algorithm, **{**common, **self.settings, **overrides})


def recipes(paper: str, methods: dict[str, tuple[str, dict]]) -> dict[str, Recipe]:
    """{label: Recipe} from {label: (algorithm, settings)}."""
    return {label: Recipe(label, algorithm, dict(settings), paper) for label, (algorithm, settings) in methods.items()}
