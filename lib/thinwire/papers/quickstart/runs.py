"""The quickstart comparison: Plump-DP (fp32) vs top-k 1% with error feedback vs 8-bit
min-max quantization on the push, the pull in fp32, K workers, SGD."""

from __future__ import annotations

from ...codecs import make_codec
from ...experiment import RunConfig
from ..profile import check_profile, check_steps
from ..recipe import Recipe, recipes
from .profiles import QUICKSTART

METHODS = {
    "Plump-DP (fp32)": "fp32",
    "top-k 1% + error feedback": "ef(topk(ratio=0.01))",
    "8-bit quantization": "quantize(bits=8)",
}


def quickstart_recipes(codec: str = "") -> dict[str, Recipe]:
    """Each method as a recipe: Plump-DP with SGD at lr 0.1 and the method's push codec
    (plus ``codec`` when it is not empty; a bad one is an error that names ``codec``)."""
    if codec:
        try:
            make_codec(codec)
        except ValueError as exc:
            raise ValueError(f"codec={codec!r} is not allowed: {exc}") from None
    methods = dict(METHODS, **({f"custom: {codec}": codec} if codec else {}))
    return recipes("quickstart", {label: ("plump_dp", dict(push_codec=spec, optimizer="sgd", lr=0.1))
                                  for label, spec in methods.items()})


def quickstart_configs(*, profile: str, dataset: str = "mnist", model: str = "", workers: int = 4, codec: str = "",
                       network: str = "ethernet_10g", seed: int = 0, device: str = "auto",
                       steps: int = 0) -> dict[str, RunConfig]:
    """One validated RunConfig per method; ``model``: a model spec, or "" for the profile's;
    ``steps`` > 0 caps the run length (time-capped runs of a large profile)."""
    size = dict(QUICKSTART[check_profile(profile)])
    if check_steps(steps):
        size["steps"], size["eval_every"] = min(size["steps"], steps), min(size["eval_every"], steps)
    size["model"] = model or size["model"]
    common = dict(dataset=dataset, workers=workers, network=network, seed=seed, batch_size=32, device=device, **size)
    return {label: recipe.apply(common) for label, recipe in quickstart_recipes(codec).items()}
