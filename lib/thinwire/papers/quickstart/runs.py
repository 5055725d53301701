"""The quickstart comparison: Plump-DP (fp32) vs top-k 1% with error feedback vs 8-bit
min-max quantization on the push, the pull in fp32, K workers, SGD."""

from __future__ import annotations

from ...experiment import RunConfig
from ..profile import check_profile, check_steps
from .profiles import QUICKSTART

METHODS = {
    "Plump-DP (fp32)": "fp32",
    "top-k 1% + error feedback": "ef(topk(ratio=0.01))",
    "8-bit quantization": "quantize(bits=8)",
}


def quickstart_configs(profile: str, dataset: str, model: str, workers: int, codec: str,
                       network: str, seed: int, device: str = "auto", steps: int = 0) -> dict[str, RunConfig]:
    """One validated RunConfig per method (plus ``codec`` when it is not empty); ``model``: a
    model spec, or "" for the profile's; ``steps`` > 0 caps the run length (time-capped runs
    of a large profile)."""
    size = dict(QUICKSTART[check_profile(profile)])
    if check_steps(steps):
        size["steps"], size["eval_every"] = min(size["steps"], steps), min(size["eval_every"], steps)
    size["model"] = model or size["model"]
    methods = dict(METHODS)
    if codec:
        methods[f"custom: {codec}"] = codec
    return {label: RunConfig(dataset=dataset, workers=workers, push_codec=spec, network=network,
                             seed=seed, batch_size=32, optimizer="sgd", lr=0.1, device=device, **size)
            for label, spec in methods.items()}
