"""Every run of the gradient-dropping reproduction (Aji & Heafield 2017), and the numbers
its notebook reports.

Setup (Sec. 5): MNIST, three fully connected hidden layers, AdaGrad lr 0.005, batch 40
per node, N nodes with parameter sharding (``sharded_ps``), layer normalization and one
global threshold by default. Pushes are dropped gradients with a residual; pulls are
dropped deltas from the client copy (no residual of their own: the copy is the memory).
The 1- and 2-bit variants quantize the pushes; their pulls stay float32.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...experiment import RunConfig
from ..profile import check_profile, check_steps
from .profiles import GRADIENT_DROPPING

RATIOS = (0.0, 0.9, 0.99, 0.999)
QUANTIZED = ((1, "threshold"), (1, "global"), (1, "column"), (2, "threshold"), (2, "global"), (2, "column"))
MARIAN_EPS = 1e-8  # Marian's AdaGrad epsilon (``eps_`` in src/optimizers/optimizers.h); torch's is 1e-10
DIAGNOSIS_SGD_LR = 0.1  # plain SGD for the pull diagnosis (AdaGrad's 0.005 is far too small without it)
LEVEL_NAMES = {"threshold": "threshold (Strom)", "global": "global average", "column": "column-wise average"}


def drop_codecs(ratio: float, encoding: str = "offset_value", scope: str = "global", bits: int = 0,
                levels: str = "threshold", sampling: str = "random", pull_ties: str = "drop") -> tuple[str, str]:
    """(push spec, pull spec) for drop ratio ``ratio``; ratio 0 is the dense fp32 baseline.
    ``pull_ties="keep"`` also sends pull deltas equal to the threshold (see ``GradDrop``)."""
    if ratio == 0:
        return "fp32", "fp32"
    push = (f"graddrop(ratio={ratio}, sampling={sampling!r}, scope={scope!r}, encoding={encoding!r}, "
            f"bits={bits}, levels={levels!r})")
    ties = "" if pull_ties == "drop" else f", ties={pull_ties!r}"
    pull = f"graddrop(ratio={ratio}, sampling={sampling!r}, encoding={encoding!r}, residual=False{ties})"
    return push, pull


@dataclass
class GradientDroppingRuns:
    ratios: dict[float, RunConfig] = field(default_factory=dict)       # Fig. 2, 6; Table 1
    index_value: dict[float, RunConfig] = field(default_factory=dict)  # same runs, other encoding
    scope: dict[str, RunConfig] = field(default_factory=dict)          # Fig. 4
    quantized: dict[str, RunConfig] = field(default_factory=dict)      # Fig. 8
    speed: dict[float, RunConfig] = field(default_factory=dict)        # Table 1 on gloo
    diagnosis: dict[tuple[str, str], RunConfig] = field(default_factory=dict)  # (optimizer, codecs) -> config
    marian: dict[tuple[str, str], RunConfig] = field(default_factory=dict)     # (schedule, setting) -> config

    def in_process(self) -> dict[str, dict]:
        return {"ratios": self.ratios, "index_value": self.index_value, "scope": self.scope,
                "quantized": self.quantized, "diagnosis": self.diagnosis, "marian": self.marian}


def gradient_dropping_runs(profile: str, dataset: str, workers: int, layer_norm: bool, sampling: str,
                           network: str, seed: int, device: str = "auto", steps: int = 0) -> GradientDroppingRuns:
    """Validated configs for every figure and table; ``ValueError`` names a bad parameter.
    ``steps`` > 0 caps every run's length (time-capped runs of a large profile)."""
    size = dict(GRADIENT_DROPPING[check_profile(profile)])
    speed_steps, warmup = size.pop("speed_steps"), size.pop("warmup_steps")
    if check_steps(steps):
        size["steps"], size["eval_every"] = min(size["steps"], steps), min(size["eval_every"], steps)
        speed_steps = min(speed_steps, steps)
    if sampling not in ("random", "stride"):
        raise ValueError(f"sampling={sampling!r} is not allowed: sampling must be one of ['random', 'stride']")
    base = RunConfig(algorithm="sharded_ps", dataset=dataset, model="mlp", layer_norm=layer_norm, workers=workers,
                     batch_size=40, optimizer="adagrad", lr=0.005, pull_mode="delta", network=network, seed=seed, device=device,
                     **size)

    def with_codecs(config, **kwargs):
        push, pull = drop_codecs(sampling=sampling, **kwargs)
        return config.replace(push_codec=push, pull_codec=pull)

    runs = GradientDroppingRuns()
    for ratio in RATIOS:
        runs.ratios[ratio] = with_codecs(base, ratio=ratio)
        if ratio:
            runs.index_value[ratio] = with_codecs(base, ratio=ratio, encoding="index_value")
        runs.speed[ratio] = runs.ratios[ratio].replace(steps=speed_steps, eval_every=speed_steps,
                                    eval_samples=min(1000, base.eval_samples))
    for norm in (True, False):
        for scope in ("global", "local"):
            label = f"{scope} threshold, {'with' if norm else 'no'} layer norm"
            runs.scope[label] = with_codecs(base.replace(layer_norm=norm), ratio=0.99, scope=scope)
    for bits, levels in QUANTIZED:
        runs.quantized[f"{bits}-bit, {LEVEL_NAMES[levels]}"] = with_codecs(base, ratio=0.99, bits=bits, levels=levels)
    for optimizer, lr in (("adagrad", base.lr), ("sgd", DIAGNOSIS_SGD_LR)):
        plain = base.replace(optimizer=optimizer, lr=lr)
        dropped = with_codecs(plain, ratio=0.99)
        runs.diagnosis[(optimizer, "no dropping")] = plain
        runs.diagnosis[(optimizer, "99% pushes and pulls")] = dropped
        runs.diagnosis[(optimizer, "99% pushes, dense pulls")] = dropped.replace(pull_codec="fp32")
        runs.diagnosis[(optimizer, "99% pushes and pulls, ties kept")] = with_codecs(plain, ratio=0.99,
                                                                                      pull_ties="keep")
    # Marian's three settings at 99%, one at a time and together; each gap is taken to the
    # dense run with the same schedule (asynchronous: with Marian's epsilon as well).
    drop99 = runs.ratios[0.99]
    runs.marian[("sync", "no dropping")] = runs.ratios[0.0]
    runs.marian[("sync", "99%, as above")] = drop99
    runs.marian[("sync", "99%, AdaGrad eps 1e-8")] = drop99.replace(adagrad_eps=MARIAN_EPS)
    runs.marian[("sync", f"99%, {warmup} dense warm-up steps")] = drop99.replace(warmup_steps=warmup)
    runs.marian[("async", "no dropping")] = runs.ratios[0.0].replace(schedule="async", adagrad_eps=MARIAN_EPS)
    runs.marian[("async", "99%, asynchronous alone")] = drop99.replace(schedule="async")
    runs.marian[("async", "99%, all three (Marian)")] = drop99.replace(schedule="async", adagrad_eps=MARIAN_EPS,
                                                                        warmup_steps=warmup)
    return runs


