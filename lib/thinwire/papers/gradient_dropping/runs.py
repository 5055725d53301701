"""Every run of the gradient-dropping reproduction (Aji & Heafield 2017), and the numbers
its notebook reports.

Setup (Sec. 5): MNIST, three fully connected hidden layers, AdaGrad lr 0.005, batch 40
per node, N nodes with parameter sharding (``sharded_ps``), layer normalization and one
global threshold by default. Pushes are dropped gradients with a residual; pulls are
dropped deltas from the client copy (no residual of their own: the copy is the memory).
The 1- and 2-bit variants quantize the pushes; their pulls stay float32.

Settings (``SETTINGS``) of the figure and table runs:
- ``"marian"`` (default), the closest to the paper: asynchronous SGD ("All experiments used
  asynchronous SGD", Sec. 5), AdaGrad eps 1e-8 and a dense warm-up before dropping, as in
  Marian (marian-nmt/marian-dev ``src/training/graph_group_async_drop.h``: ``PUSH_WARMUP``
  and ``FETCH_WARMUP`` = 100; ``src/optimizers/optimizers.h``: ``eps_`` = 1e-8);
- ``"sync"``: one averaged AdaGrad step per step with torch's eps and no warm-up.
The pull diagnosis stays synchronous (it explains the synchronous gap) and the
Marian table holds both (each of Marian's settings alone, then all three).

The gap over seeds (``seed_runs``) reruns the dense run and 99% of the notebook's setting on
the profile's seeds with a warm-up that is a small share of the run: by default the paper
profile's share (100 of 7,500 steps, 1.3%), so that the warm-up does not close the gap by
itself (at the default's 450 steps, Marian's 100 steps are 22% of the run). ``paper_width``
adds one dense run at the paper's width (3 x 4096) beside the profile's, at the profile's
length, to test what width does to the baseline's accuracy.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...experiment import RunConfig
from ...models import MLPSpec
from ...validation import check
from ..profile import check_profile, check_steps
from ..recipe import Recipe, recipes
from .profiles import GRADIENT_DROPPING

RATIOS = (0.0, 0.9, 0.99, 0.999)
QUANTIZED = ((1, "threshold"), (1, "global"), (1, "column"), (2, "threshold"), (2, "global"), (2, "column"))
SETTINGS = ("marian", "sync")
MARIAN_EPS = 1e-8  # Marian's AdaGrad epsilon (``eps_`` in src/optimizers/optimizers.h); torch's is 1e-10
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


def setting_options(setting: str, warmup: int) -> tuple[dict, dict]:
    """(options of every run, extra options of dropping runs) for ``setting``."""
    if setting not in SETTINGS:
        raise ValueError(f"setting={setting!r} is not allowed: setting must be one of {list(SETTINGS)}")
    if setting == "sync":
        return {}, {}
    return dict(schedule="async", adagrad_eps=MARIAN_EPS), dict(warmup_steps=warmup)


def gradient_dropping_recipes(*, setting: str = "marian", warmup: int = 100, sampling: str = "random",
                              ratio: float = 0.99) -> dict[str, Recipe]:
    """The sharded server with AdaGrad (lr 0.005, delta pulls), dense and dropping ``ratio``,
    in ``setting`` (module docstring) with ``warmup`` dense steps before dropping."""
    every, dropping = setting_options(setting, warmup)
    server = dict(optimizer="adagrad", lr=0.005, pull_mode="delta", **every)
    push, pull = drop_codecs(ratio, sampling=sampling)
    return recipes("gradient_dropping", {
        "no dropping": ("sharded_ps", server),
        f"{ratio:.0%} dropping": ("sharded_ps", dict(server, **dropping, push_codec=push, pull_codec=pull))})


@dataclass
class GradientDroppingRuns:
    ratios: dict[float, RunConfig] = field(default_factory=dict)       # Fig. 2, 6; Table 1
    index_value: dict[float, RunConfig] = field(default_factory=dict)  # 99%, index-value: 8 bytes per survivor
    scope: dict[str, RunConfig] = field(default_factory=dict)          # Fig. 4
    quantized: dict[str, RunConfig] = field(default_factory=dict)      # Fig. 8
    speed: dict[float, RunConfig] = field(default_factory=dict)        # Table 1 on gloo
    diagnosis: dict[tuple[str, str], RunConfig] = field(default_factory=dict)  # (optimizer, codecs) -> config
    marian: dict[tuple[str, str], RunConfig] = field(default_factory=dict)     # (schedule, setting) -> config
    longer: dict[str, RunConfig] = field(default_factory=dict)         # dense and 99% trained twice as long
    seed_runs: dict[tuple[str, int], RunConfig] = field(default_factory=dict)  # (dense | 99%, seed): the gap over seeds
    width: dict[str, RunConfig] = field(default_factory=dict)          # dense at the profile's and the paper's width
    setting: str = "marian"
    warmup_steps: int = 0                                             # of the dropping runs in ``ratios``
    studies: bool = False                                             # whether diagnosis, marian, longer ran

    def in_process(self) -> dict[str, dict]:
        return {"ratios": self.ratios, "index_value": self.index_value, "scope": self.scope,
                "quantized": self.quantized, "diagnosis": self.diagnosis, "marian": self.marian,
                "longer": self.longer, "seed_runs": self.seed_runs, "width": self.width}


def gradient_dropping_runs(*, profile: str, dataset: str = "mnist", workers: int = 4, layer_norm: bool = True,
                           sampling: str = "random", network: str = "ethernet_10g", seed: int = 0,
                           device: str = "auto", steps: int = 0, setting: str = "marian", seed_steps: int = 0,
                           seed_warmup: int = -1, paper_width: bool = False,
                           studies: bool = False) -> GradientDroppingRuns:
    """Validated configs for every figure and table; ``ValueError`` names a bad parameter.
    ``steps`` > 0 caps every run's length (time-capped runs of a large profile); ``setting``
    is one of ``SETTINGS`` (module docstring). The gap over seeds runs ``seed_steps`` steps (0:
    the profile's) with ``seed_warmup`` dense steps first (-1: ``paper_warmup_share`` of the
    run); ``paper_width`` adds the dense run at the paper's width; ``studies`` True runs the
    one-seed studies (diagnosis, Marian's settings, training length) where the profile does not."""
    size = dict(GRADIENT_DROPPING[check_profile(profile)])
    check("studies", studies, isinstance(studies, bool), "True or False")
    studies = size.pop("studies") or studies
    # one node pushes to and pulls from itself: nothing crosses a network, no reduction to show
    check("workers", workers, isinstance(workers, int) and not isinstance(workers, bool) and workers >= 2,
          "an int >= 2 (each node sends its shards to the others)")
    speed_steps, warmup, widths = size.pop("speed_steps"), size.pop("warmup_steps"), size.pop("quantized_bits")
    seeds = tuple(seed + s for s in size.pop("seeds"))
    model = MLPSpec(hidden=size.pop("hidden"), layer_norm=layer_norm)
    if check_steps(steps):
        size["steps"], size["eval_every"] = min(size["steps"], steps), min(size["eval_every"], steps)
        speed_steps = min(speed_steps, steps)
    if sampling not in ("random", "stride"):
        raise ValueError(f"sampling={sampling!r} is not allowed: sampling must be one of ['random', 'stride']")
    every, dropping = setting_options(setting, warmup)
    common = dict(dataset=dataset, model=model, workers=workers, batch_size=40, network=network, seed=seed,
                  device=device, **size)
    sync = gradient_dropping_recipes(setting="sync", sampling=sampling)["no dropping"].apply(common)
    base = sync.replace(**every)

    def with_codecs(config, extra=None, **kwargs):
        """``config`` with the codecs of ``drop_codecs(**kwargs)`` and, when it drops, ``extra``."""
        push, pull = drop_codecs(sampling=sampling, **kwargs)
        config = config.replace(push_codec=push, pull_codec=pull)
        return config.replace(**extra) if extra and kwargs.get("ratio") else config

    runs = GradientDroppingRuns(setting=setting, warmup_steps=dropping.get("warmup_steps", 0), studies=studies)
    for ratio in RATIOS:
        runs.ratios[ratio] = with_codecs(base, dropping, ratio=ratio)
        # the speed runs drop from their first step: they are shorter than the warm-up
        runs.speed[ratio] = with_codecs(base, ratio=ratio).replace(steps=speed_steps, eval_every=speed_steps,
                                                                    eval_samples=min(1000, base.eval_samples))
    runs.index_value[0.99] = with_codecs(base, dropping, ratio=0.99, encoding="index_value")
    for norm in (True, False):
        for scope in ("global", "local"):
            label = f"{scope} threshold, {'with' if norm else 'no'} layer norm"
            runs.scope[label] = with_codecs(base.replace(model=model.replace(layer_norm=norm)), dropping, ratio=0.99, scope=scope)
    for bits, levels in (q for q in QUANTIZED if q[0] in widths):
        runs.quantized[f"{bits}-bit, {LEVEL_NAMES[levels]}"] = with_codecs(base, dropping, ratio=0.99, bits=bits,
                                                                           levels=levels)
    if studies:  # the one-seed studies of the accuracy gap
        # the pull diagnosis of the synchronous gap (AdaGrad, the paper's optimizer)
        drop99 = with_codecs(sync, ratio=0.99)
        runs.diagnosis[("adagrad", "no dropping")] = sync
        runs.diagnosis[("adagrad", "99% pushes and pulls")] = drop99
        runs.diagnosis[("adagrad", "99% pushes, dense pulls")] = drop99.replace(pull_codec="fp32")
        runs.diagnosis[("adagrad", "99% pushes and pulls, ties kept")] = with_codecs(sync, ratio=0.99, pull_ties="keep")
        # Marian's three settings at 99%, one at a time and together; each gap is taken to the
        # dense run with the same schedule (asynchronous: with Marian's epsilon as well).
        marian, _ = setting_options("marian", warmup)
        runs.marian[("sync", "no dropping")] = sync
        runs.marian[("sync", "99%")] = drop99
        runs.marian[("sync", "99%, AdaGrad eps 1e-8")] = drop99.replace(adagrad_eps=MARIAN_EPS)
        runs.marian[("sync", f"99%, {warmup} dense warm-up steps")] = drop99.replace(warmup_steps=warmup)
        runs.marian[("async", "no dropping")] = sync.replace(**marian)
        runs.marian[("async", "99%, asynchronous alone")] = drop99.replace(schedule="async")
        runs.marian[("async", "99%, all three (Marian)")] = drop99.replace(**marian, warmup_steps=warmup)
        # training length: the dense run and 99% of this setting, twice as many steps
        for label, ratio in (("no dropping", 0.0), ("99%", 0.99)):
            config = runs.ratios[ratio]
            runs.longer[label] = config.replace(steps=2 * config.steps)
    # the gap over seeds, with a warm-up that is a small share of the run
    length = check_seed_steps(seed_steps)
    length = min(length or size["steps"], steps or length or size["steps"])
    evaluate = dict(steps=length, eval_every=max(1, size["eval_every"] * length // size["steps"]))
    warm = dict(warmup_steps=check_seed_warmup(seed_warmup, length)) if setting == "marian" else {}
    for s in seeds:
        runs.seed_runs[("no dropping", s)] = runs.ratios[0.0].replace(seed=s, **evaluate)
        runs.seed_runs[("99%", s)] = runs.ratios[0.99].replace(seed=s, **evaluate, **warm)
    if not isinstance(paper_width, bool):
        raise ValueError(f"paper_width={paper_width!r} is not allowed: paper_width must be True or False")
    if paper_width:
        for hidden in (model.hidden, PAPER_HIDDEN):
            runs.width[f"hidden {hidden[0]}"] = runs.ratios[0.0].replace(model=model.replace(hidden=hidden))
    return runs


PAPER_HIDDEN = GRADIENT_DROPPING["paper"]["hidden"]


def paper_warmup_share() -> float:
    """The paper profile's warm-up share: Marian's 100 dense steps of its 7,500 (20 epochs)."""
    paper = GRADIENT_DROPPING["paper"]
    return paper["warmup_steps"] / paper["steps"]


def check_seed_steps(seed_steps) -> int:
    if not isinstance(seed_steps, int) or isinstance(seed_steps, bool) or seed_steps < 0:
        raise ValueError(f"seed_steps={seed_steps!r} is not allowed: seed_steps must be 0 (the profile's) or a "
                         "positive int")
    return seed_steps


def check_seed_warmup(seed_warmup, length: int) -> int:
    """The dense warm-up of the runs over seeds: ``seed_warmup``, or -1 for the paper
    profile's share of ``length`` steps (at least one step)."""
    if not isinstance(seed_warmup, int) or isinstance(seed_warmup, bool) or not -1 <= seed_warmup < length:
        raise ValueError(f"seed_warmup={seed_warmup!r} is not allowed: seed_warmup must be -1 (the paper profile's "
                         f"share, {paper_warmup_share():.2%} of the run) or an int in 0..{length - 1}")
    return max(1, round(paper_warmup_share() * length)) if seed_warmup == -1 else seed_warmup
