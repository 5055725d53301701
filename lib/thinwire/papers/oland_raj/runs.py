"""Every run of the Oland & Raj (2015) reproduction, and the numbers its notebook reports.

Set-up (Sec. 2, 3, 5): MNIST, 784-392-50-10 fully connected with tanh everywhere, squared
error, mini-batch SGD with exponential learning-rate decay and light L1, 5 workers that
average their weights after every epoch (``weight_averaging``). The paper does not give
the batch size, learning rate, decay or L1 strength: we use 20 per worker, lr 0.1,
decay 0.95 per epoch and L1 1e-5 (the best of a small sweep at the default profile).
Transmissions: fp32 (the unquantized baseline), fixed N-bit quantization (Fig. 1) or the
entropy rule with floor ``c`` and pre-quantization ``M`` (Alg. 1; F = 0.03, ceiling 10).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...experiment import RunConfig
from ..profile import check_profile
from ..recipe import Recipe, recipes
from .probes import OlandRajProbes
from .profiles import OLAND_RAJ

MODEL = "mlp(hidden=(392, 50), activation='tanh')"  # Sec. 5: 784-392-50-10, tanh everywhere
PROBES = OlandRajProbes().spec()                           # Fig. 2 gradient RMS, Fig. 5 coders
PROBES_GRID = OlandRajProbes(entropy_grid=True).spec()      # and Fig. 3's (M, F) entropy grid
F = 0.03
CEILING = 10
PAPER_SAMPLES, PAPER_EPOCHS = 60000, 100  # Sec. 5: the whole MNIST training set, 100 epochs


def adaptive(c: int, m: int, reading: str = "") -> dict:
    """Alg. 1 with floor ``c`` and pre-quantization ``m``: the entropy rule is a policy
    (``policies.EntropyBits``) and the codec quantizes to the bits it decides, Huffman-coded.
    ``reading``: extra policy arguments (``rounding='fractional'``, ``unit='nats'``)."""
    policy = f"entropy_bits(c={c}, m={m}, f={F}, ceiling={CEILING}{', ' + reading if reading else ''})"
    codec = "binquant(bits=0, coder='huffman')"
    return dict(push_codec=codec, pull_codec=codec, push_policy=policy, pull_policy=policy)


def fixed(bits: int) -> dict:
    codec = f"binquant(bits={bits}, coder='raw')"
    return dict(push_codec=codec, pull_codec=codec)


TRIPLE = ("baseline", "c=5, M=4", "c=6, M=4")  # what each bit-rate experiment runs
HEADLINE = {"baseline": dict(push_codec="fp32", pull_codec="fp32"), "c=5, M=4": adaptive(5, 4),
            "c=6, M=4": adaptive(6, 4), "fixed 8 bits": fixed(8)}


def oland_raj_recipes(*, lr: float = 0.1, lr_decay: float = 0.95, l1: float = 1e-5) -> dict[str, Recipe]:
    """The headline transmissions as recipes: weight averaging with local SGD (``lr``,
    exponential ``lr_decay`` per epoch, L1 ``l1``) and the figure probes."""
    return recipes("oland_raj", {label: ("weight_averaging", dict(transmission, lr=lr, lr_decay=lr_decay, l1=l1,
                                                                  observe=PROBES))
                                 for label, transmission in HEADLINE.items()})


@dataclass
class OlandRajRuns:
    headline: dict[tuple[str, int], RunConfig] = field(default_factory=dict)   # (label, seed): table, Fig. 5
    fixed: dict[tuple[int, int], RunConfig] = field(default_factory=dict)      # (bits, seed): Fig. 1
    ceiling10: dict[tuple[str, int], RunConfig] = field(default_factory=dict)  # ("c:M" label, seed): Fig. 4a, c
    m4: dict[tuple[int, int], RunConfig] = field(default_factory=dict)         # (c, seed): Fig. 4b, d
    baseline: dict[int, RunConfig] = field(default_factory=dict)               # seed: the fp32 runs
    l1: dict[tuple[str, float], RunConfig] = field(default_factory=dict)       # (label, l1): the bits gap
    # the bit-rate experiments: {(setting, label): config}, label in TRIPLE (baseline, c=5, c=6)
    settings: dict[tuple[str, str], RunConfig] = field(default_factory=dict)
    longer: dict[tuple[str, int], RunConfig] = field(default_factory=dict)      # (label, seed): epochs to peak
    l1_scaled: float = 0.0                                                     # the L1 strength of ``longer``
    studies: bool = False                                                      # whether l1 and settings ran

    def all(self) -> list[RunConfig]:
        seen = {}
        for group in (self.headline, self.fixed, self.ceiling10, self.m4, self.l1, self.settings, self.longer):
            for config in group.values():
                seen.setdefault(config.key(), config)
        return list(seen.values())


def oland_raj_runs(*, profile: str, dataset: str = "mnist", workers: int = 5, batch_size: int = 20, lr: float = 0.1,
                   lr_decay: float = 0.95, l1: float = 1e-5, seed: int = 0, device: str = "auto",
                   long_epochs: int = 0, long_seeds: int = 0, studies: bool = False) -> OlandRajRuns:
    """Validated configs for every figure and the table; ``ValueError`` names a bad parameter.
    ``long_epochs`` > 0 replaces the profile's length of the longer runs (epochs to peak), and
    ``long_seeds`` > 0 their seeds (the first ``long_seeds``); either runs the longer runs
    where the profile does not. ``studies`` True runs the L1 ablation, the settings and the
    longer runs where the profile does not (``profiles.py``)."""
    size = dict(OLAND_RAJ[check_profile(profile)])
    for name, value in (("long_epochs", long_epochs), ("long_seeds", long_seeds)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ValueError(f"{name}={value!r} is not allowed: {name} must be 0 (the profile's) or a positive int")
    if not isinstance(studies, bool):
        raise ValueError(f"studies={studies!r} is not allowed: studies must be True or False")
    studies = studies or size["studies"]
    longer_runs = studies or bool(long_epochs or long_seeds)
    size["long_epochs"] = long_epochs or size["long_epochs"]
    size["long_seeds"] = tuple(range(long_seeds)) if long_seeds else size["long_seeds"]
    if not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed={seed!r} is not allowed: seed must be an int >= 0")
    probe = RunConfig(algorithm="weight_averaging", dataset=dataset, model=MODEL,
                      loss="mse", workers=workers, batch_size=batch_size, steps=1, train_samples=size["train_samples"],
                      lr=lr, lr_decay=lr_decay, l1=l1, eval_samples=size["eval_samples"], seed=seed, device=device,
                      observe=PROBES)
    samples = probe.train_samples or 60000
    steps_per_epoch = samples // workers // batch_size
    base = probe.replace(steps=steps_per_epoch * size["epochs"], eval_every=steps_per_epoch)

    def config(transmission: dict, s: int, **extra) -> RunConfig:
        return base.replace(**transmission, seed=seed + s, **extra)

    runs = OlandRajRuns(studies=studies)
    for s in size["seeds"]:
        for label, transmission in HEADLINE.items():
            runs.headline[(label, s)] = config(transmission, s, observe=PROBES_GRID if label == "baseline" else PROBES)
        runs.baseline[s] = runs.headline[("baseline", s)]
    for s in size["sweep_seeds"]:
        runs.baseline.setdefault(s, config(HEADLINE["baseline"], s, observe=PROBES_GRID))
        for bits in size["fixed_bits"]:
            runs.fixed[(bits, s)] = config(fixed(bits), s)
        for c in size["floors_ceiling10"]:
            runs.ceiling10[(f"{CEILING}:{c}", s)] = config(adaptive(c, CEILING - c), s)
        runs.ceiling10[(f"{CEILING}:{CEILING}", s)] = config(fixed(CEILING), s)
        for c in size["floors_m4"]:
            runs.m4[(c + 4, s)] = config(adaptive(c, 4), s)
    runs.l1_scaled = l1 * shrinkage(PAPER_SAMPLES, PAPER_EPOCHS, workers, batch_size, lr_decay) / shrinkage(
        samples, size["long_epochs"], workers, batch_size, lr_decay)
    if longer_runs:  # epochs to peak compares c=6 with the baseline over the seeds; c=5 runs once, for the table
        for label in TRIPLE:
            for s in size["long_seeds"] if label != "c=5, M=4" else size["long_seeds"][:1]:
                runs.longer[(label, s)] = config(HEADLINE[label], s).replace(
                    steps=steps_per_epoch * size["long_epochs"], l1=runs.l1_scaled)
    if not studies:
        return runs
    for strength in sorted({l1, *size["l1_ablation"]}):
        for label in TRIPLE:
            runs.l1[(label, strength)] = config(HEADLINE[label], 0).replace(l1=strength)
    # the bit-rate experiments, one setting at a time, first seed, each with its own baseline
    for label in TRIPLE:
        runs.settings[("as above", label)] = runs.headline[(label, 0)]
        runs.settings[(f"{size['long_epochs']} epochs, L1 scaled", label)] = runs.longer[(label, 0)]
        for init in size["inits"]:
            runs.settings[(f"init {init}", label)] = config(HEADLINE[label], 0, init=init)
        for reading, name in (("rounding='fractional'", "fractional N"), ("unit='nats'", "H in nats")):
            runs.settings[(name, label)] = runs.headline[(label, 0)] if label == "baseline" else config(
                adaptive(int(label[2]), 4, reading), 0)  # the rule changes, the float32 baseline does not
    return runs


def shrinkage(samples: int, epochs: int, workers: int, batch_size: int, lr_decay: float) -> float:
    """Sum over a run's steps of the learning-rate factor (lr_decay^epoch): an L1 strength
    shrinks each weight by lr x l1 x this much in all (the subgradient step lr x l1 x sign w)."""
    return samples // workers // batch_size * sum(lr_decay ** e for e in range(epochs))


