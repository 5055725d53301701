"""Every run of the EventGraD reproduction (Ghosh et al. 2021), as configs.

Set-up, the official MNIST code (soumyadipghosh/eventgrad, ``dmnist/event/event.cpp``):
the CNN of ``models/architectures.py`` (27,480 parameters in 8 tensors), inputs
Normalize(0.1307, 0.3081), a contiguous shard per peer read in the same order every epoch
(``sampling="sequential"``), batch 64 per peer, SGD lr 0.05 without momentum, the same
initial model on every peer (one seeded model, copied). Methods (``METHODS``): D-PSGD (every
tensor to both neighbours every iteration), EventGraD (the event trigger, horizon 1 by
default: the paper's Table 1 horizon was lost in extraction and the repository's example
uses 1) and EventGraD with Top-10% (``TOPK``; 7.3% = 2 x 10% x 36.6% in Table 2).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...experiment import RunConfig
from ..profile import check_profile, check_steps
from ..recipe import Recipe, recipes
from .profiles import EVENTGRAD

MODEL = "eventgrad_mnist_cnn"
BATCH = 64          # per peer
LR = 0.05
HORIZON = 1.0
TOPK = 0.1
TOPK_CODEC = f"topk(ratio={TOPK})"  # keyed sends: the policy names the entries; the ratio matches its k
FORCED = 29         # the official code's forced iterations (1-29)
GLOO_STEPS = 60     # length of the torch.distributed comparison
LABELS = ("D-PSGD", "EventGraD", "EventGraD Top-10%")


def event(horizon: float = HORIZON, rule: str = "paper", topk: float = 0.0, forced: int = FORCED,
          max_gap: int = 0) -> str:
    """The event policy's spec (``policies/event_trigger.py``)."""
    heartbeat = f", max_gap={max_gap}" if max_gap else ""
    return f"event(horizon={float(horizon)!r}, rule={rule!r}, topk={float(topk)!r}, forced={forced}{heartbeat})"


def methods(horizon: float = HORIZON, rule: str = "paper", forced: int = FORCED) -> dict[str, dict]:
    """{label: eventgrad section settings} of the three methods."""
    return {"D-PSGD": dict(push_policy="always"),
            "EventGraD": dict(push_policy=event(horizon, rule, forced=forced)),
            "EventGraD Top-10%": dict(push_policy=event(horizon, rule, TOPK, forced), push_codec=TOPK_CODEC)}


def eventgrad_recipes(*, horizon: float = HORIZON, lr: float = LR) -> dict[str, Recipe]:
    """D-PSGD, EventGraD and its Top-10% variant as recipes (ring peers, plain SGD)."""
    return recipes("eventgrad", {label: ("eventgrad", dict(settings, lr=lr))
                                 for label, settings in methods(horizon).items()})


@dataclass
class EventGradRuns:
    headline: dict[tuple[str, int, int], RunConfig] = field(default_factory=dict)  # (label, peers, seed)
    sweep: dict[tuple[str, float], RunConfig] = field(default_factory=dict)        # (rule, horizon): 4 peers, 1st seed
    seeds: tuple[int, ...] = ()           # the seeds of the 4-peer comparison
    scale_seeds: tuple[int, ...] = ()     # the seeds at 8 and 16 peers
    peers: tuple[int, ...] = ()
    epochs: int = 0
    gloo: RunConfig | None = None         # a short EventGraD run, 4 peers: in-process vs one gloo rank per peer
    longer: dict[str, RunConfig] = field(default_factory=dict)  # D-PSGD and EventGraD, 4 peers, 1st seed, twice as long
    topk: dict[float, RunConfig] = field(default_factory=dict)    # Top-K fraction -> EventGraD Top-K, 4 peers, 1st seed
    heartbeat: dict[int, RunConfig] = field(default_factory=dict)  # max_gap -> EventGraD with a heartbeat, 4 peers, 1st seed

    def all(self) -> list[RunConfig]:
        seen = {}
        for config in [*self.headline.values(), *self.sweep.values(), *self.longer.values(),
                       *self.topk.values(), *self.heartbeat.values()]:
            seen.setdefault(config.key(), config)
        return list(seen.values())


def eventgrad_runs(*, profile: str, dataset: str = "mnist", horizon: float = HORIZON, lr: float = LR,
                   seed: int = 0, device: str = "auto", steps: int = 0) -> EventGradRuns:
    """Validated configs of every table and figure; ``ValueError`` names a bad parameter.
    ``steps`` > 0 caps every run at that many steps (time-capped GPU runs)."""
    size = EVENTGRAD[check_profile(profile)]
    check_steps(steps)
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"seed={seed!r} is not allowed: seed must be an int >= 0")
    samples = size["train_samples"] or 60000

    def config(settings: dict, peers: int, s: int) -> RunConfig:
        per_epoch = samples // peers // BATCH
        length = per_epoch * size["epochs"]
        return RunConfig("eventgrad", dataset=dataset, model=MODEL, workers=peers, batch_size=BATCH,
                         steps=min(steps, length) if steps else length, eval_every=per_epoch,
                         train_samples=size["train_samples"], eval_samples=size["eval_samples"], seed=seed + s,
                         device=device, sampling="sequential", lr=lr, **settings)

    runs = EventGradRuns(seeds=size["seeds"], scale_seeds=size["scale_seeds"], peers=size["peers"],
                         epochs=size["epochs"])
    for peers in size["peers"]:
        for s in size["seeds"] if peers == 4 else size["scale_seeds"]:
            for label, settings in methods(horizon, forced=size["forced"]).items():
                runs.headline[(label, peers, s)] = config(settings, peers, s)
    first = size["seeds"][0]
    event4 = runs.headline[("EventGraD", 4, first)]
    runs.topk[TOPK] = runs.headline[("EventGraD Top-10%", 4, first)]
    for fraction in size["topk_sweep"]:
        runs.topk[fraction] = runs.topk[TOPK].replace(push_policy=event(horizon, topk=fraction, forced=size["forced"]),
                                                      push_codec=f"topk(ratio={fraction})")
    for gap in size["max_gaps"]:
        runs.heartbeat[gap] = event4.replace(push_policy=event(horizon, forced=size["forced"], max_gap=gap))
    for label in LABELS[:2]:
        config4 = runs.headline[(label, 4, first)]
        runs.longer[label] = config4.replace(steps=2 * config4.steps)
    runs.gloo = event4.replace(steps=min(event4.steps, GLOO_STEPS), eval_every=min(event4.steps, GLOO_STEPS))
    runs.sweep[("paper", horizon)] = runs.headline[("EventGraD", 4, first)]
    for rule, horizons in size["sweep"].items():
        for h in horizons:
            runs.sweep[(rule, h)] = config(methods(h, rule, size["forced"])["EventGraD"], 4, first)
    return runs
