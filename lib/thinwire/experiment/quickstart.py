"""The quickstart comparison: Plump-DP (fp32) vs top-k 1% with error feedback vs 8-bit
min-max quantization on the push, the pull in fp32, K workers, SGD."""

from __future__ import annotations

from .config import RunConfig
from .profiles import QUICKSTART, check_profile

METHODS = {
    "Plump-DP (fp32)": "fp32",
    "top-k 1% + error feedback": "ef(topk(ratio=0.01))",
    "8-bit quantization": "quantize(bits=8)",
}


def quickstart_configs(profile: str, dataset: str, model: str, workers: int, codec: str,
                       network: str, seed: int) -> dict[str, RunConfig]:
    """One validated RunConfig per method (plus ``codec`` when it is not empty)."""
    size = QUICKSTART[check_profile(profile)]
    methods = dict(METHODS)
    if codec:
        methods[f"custom: {codec}"] = codec
    return {label: RunConfig(dataset=dataset, model=model, workers=workers, push_codec=spec, network=network,
                             seed=seed, batch_size=32, optimizer="sgd", lr=0.1, **size)
            for label, spec in methods.items()}
