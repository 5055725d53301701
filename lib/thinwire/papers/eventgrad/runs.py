"""Every run of the EventGraD reproduction (Ghosh et al. 2021), as configs.

Set-up, the official MNIST code (soumyadipghosh/eventgrad, ``dmnist/event/event.cpp``):
the CNN of ``models/architectures.py`` (27,480 parameters in 8 tensors), inputs
Normalize(0.1307, 0.3081), a contiguous shard per peer read in the same order every epoch
(``sampling="sequential"``), batch 64 per peer, SGD lr 0.05 without momentum, the same
initial model on every peer (one seeded model, copied). Methods (``METHODS``): D-PSGD (every
tensor to both neighbours every iteration), EventGraD (the event trigger, horizon 1 by
default: the paper's Table 1 horizon was lost in extraction and the repository's example
uses 1) and EventGraD with Top-10% (``TOPK``; 7.3% = 2 x 10% x 36.6% in Table 2).

CIFAR-10 (``dataset="cifar10"``, read from ``data/cifar10``), the paper's Tables 1-2 and the
official ``dcifar10`` code: the code's "ResNet-18" (``eventgrad_resnet18``: 3 BasicBlocks
per stage, 86 tensors; ``model="resnet(blocks=(2, 2, 2, 2))"`` is the standard one, 62
tensors), a global batch of 256 split over the peers, SGD lr 0.01 with momentum 0.9 kept
per peer, seeded shards reshuffled every epoch (libtorch's ``DistributedRandomSampler``),
pad-4 crop and flip, 20 epochs at the paper profile. The code feeds raw 0-255 pixels;
here inputs are standardised per channel as everywhere else in the workbench (the batch
norm after the stem absorbs a scale). Batch-norm statistics stay with each peer.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...datasets import TRAIN_SIZES
from ...experiment import RunConfig
from ..profile import check_profile, check_steps
from ..recipe import Recipe, recipes
from .profiles import EVENTGRAD, EVENTGRAD_CIFAR10

MODEL = "eventgrad_mnist_cnn"
BATCH = 64          # per peer
LR = 0.05
MNIST_SETUP = dict(model=MODEL, batch=BATCH, lr=LR, momentum=0.0, sampling="sequential", augment="none")
SETUPS = {          # per dataset: the official code's network and training settings
    "mnist": MNIST_SETUP,
    "fashion_mnist": MNIST_SETUP,
    "cifar10": dict(model="eventgrad_resnet18", global_batch=256, lr=0.01, momentum=0.9, sampling="shuffled",
                    augment="crop_flip"),
}
HORIZON = 1.0
TOPK = 0.1
TOPK_CODEC = f"topk(ratio={TOPK})"  # keyed sends: the policy names the entries; the ratio matches its k
FORCED = 29         # the official code's forced iterations (1-29)
GLOO_STEPS = 60     # length of the torch.distributed comparison
LABELS = ("D-PSGD", "EventGraD", "EventGraD Top-10%")


def event(horizon: float = HORIZON, rule: str = "paper", topk: float = 0.0, forced: int = FORCED,
          max_gap: int = 0, norm_of: str = "tensor") -> str:
    """The event policy's spec (``policies/event_trigger.py``)."""
    heartbeat = f", max_gap={max_gap}" if max_gap else ""
    copy = f", norm_of={norm_of!r}" if norm_of != "tensor" else ""
    return (f"event(horizon={float(horizon)!r}, rule={rule!r}, topk={float(topk)!r}, forced={forced}"
            f"{heartbeat}{copy})")


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
    forced: int = 0                       # the forced iterations of every EventGraD run
    gloo: RunConfig | None = None         # a short EventGraD run, 4 peers: in-process vs one gloo rank per peer
    length: dict[tuple[str, int], RunConfig] = field(default_factory=dict)  # (label, seed): 4 peers, length_epochs
    length_epochs: int = 0                # epochs of the training-length study (0: none)
    topk: dict[float, RunConfig] = field(default_factory=dict)    # Top-K fraction -> EventGraD Top-K, 4 peers, 1st seed
    topk_every: RunConfig | None = None   # Top-10% whenever a norm moves at all (horizon 0): no trigger, 4 peers, 1st seed
    cifar_optimizer: dict[str, RunConfig] = field(default_factory=dict)  # each method with the CIFAR-10 SGD, 4 peers, 1st seed
    heartbeat: dict[int, RunConfig] = field(default_factory=dict)  # max_gap -> EventGraD with a heartbeat, 4 peers, 1st seed
    topk_copy: dict[int, RunConfig] = field(default_factory=dict)  # seed -> Top-10% recording the copy's norm, 4 peers
    # the causes over seeds (profile key ``causes``): 4 peers, every seed of ``seeds``
    heartbeat_seeds: dict[int, RunConfig] = field(default_factory=dict)  # seed -> EventGraD, heartbeat ``max_gaps[0]``
    momentum: dict[tuple[str, int], RunConfig] = field(default_factory=dict)  # (label, seed): D-PSGD, EventGraD, SGD m 0.9
    momentum_search: dict[float, RunConfig] = field(default_factory=dict)  # horizon -> EventGraD with momentum, 1st seed
    max_gap: int = 0                      # the heartbeat of ``heartbeat_seeds``
    causes: bool = False                  # whether the causes over seeds run
    studies: bool = False                 # whether the one-seed ablations (sweep, Top-K, heartbeat, ...) run

    def random_at(self, seed: int, p: float) -> RunConfig:
        """D-PSGD of ``seed`` (4 peers) with a random trigger that sends a tensor with
        probability ``p`` after the forced iterations: the share of an event run without its
        choice of moments."""
        return self.headline[("D-PSGD", 4, seed)].replace(push_policy=f"random_send(p={p}, forced={self.forced})")

    def momentum_at(self, horizon: float, seed: int) -> RunConfig:
        """EventGraD with momentum (``momentum``'s SGD) at ``horizon``, 4 peers, ``seed``."""
        return self.momentum[("EventGraD", seed)].replace(push_policy=event(horizon, forced=self.forced))

    def all(self) -> list[RunConfig]:
        seen = {}
        for config in [*self.headline.values(), *self.sweep.values(), *self.length.values(),
                       *self.topk.values(), *self.heartbeat.values(), *filter(None, [self.topk_every]),
                       *self.topk_copy.values(), *self.heartbeat_seeds.values(), *self.momentum.values(),
                       *self.momentum_search.values(), *self.cifar_optimizer.values()]:
            seen.setdefault(config.key(), config)
        return list(seen.values())


def eventgrad_runs(*, profile: str, dataset: str = "mnist", horizon: float = HORIZON, lr: float = 0.0,
                   seed: int = 0, device: str = "auto", steps: int = 0, model: str = "",
                   length_epochs: int = 0, causes: bool = False, studies: bool = False) -> EventGradRuns:
    """Validated configs of every table and figure; ``ValueError`` names a bad parameter.
    ``lr`` 0 and ``model`` "" take the official code's for ``dataset`` (``SETUPS``);
    ``steps`` > 0 caps every run at that many steps (time-capped GPU runs); ``length_epochs``
    > 0 runs the training-length study at that many epochs (0: the profile's); ``causes``
    True runs the causes over seeds, and ``studies`` True the one-seed ablations and the
    ``study_peers``, where the profile does not (``profiles.py``)."""
    check_profile(profile)
    if dataset not in SETUPS:
        raise ValueError(f"dataset={dataset!r} is not allowed: dataset must be one of {list(SETUPS)}")
    size = (EVENTGRAD_CIFAR10 if dataset == "cifar10" else EVENTGRAD)[profile]
    setup = SETUPS[dataset]
    check_steps(steps)
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"seed={seed!r} is not allowed: seed must be an int >= 0")
    if not isinstance(lr, (int, float)) or isinstance(lr, bool) or lr < 0:
        raise ValueError(f"lr={lr!r} is not allowed: lr must be a number > 0, or 0 for the official code's")
    if not isinstance(model, str):
        raise ValueError(f"model={model!r} is not allowed: model must be a model spec, or '' for the official code's")
    if not isinstance(length_epochs, int) or isinstance(length_epochs, bool) or length_epochs < 0:
        raise ValueError(f"length_epochs={length_epochs!r} is not allowed: length_epochs must be an int >= 0 "
                         "(0: the profile's)")
    length_epochs = length_epochs or size["length_epochs"]
    if not isinstance(causes, bool):
        raise ValueError(f"causes={causes!r} is not allowed: causes must be True or False")
    if not isinstance(studies, bool):
        raise ValueError(f"studies={studies!r} is not allowed: studies must be True or False")
    size = {**size, "causes": causes or size["causes"], "studies": studies or size["studies"]}
    if size["causes"] and not size["momentum_horizons"]:
        raise ValueError(f"causes=True is not allowed for {dataset} at the {profile} profile: it has no "
                         "momentum_horizons (its SGD already has momentum)")
    samples = size["train_samples"] or TRAIN_SIZES[dataset]

    def config(settings: dict, peers: int, s: int, epochs: int = size["epochs"]) -> RunConfig:
        batch = setup["global_batch"] // peers if "global_batch" in setup else setup["batch"]
        per_epoch = samples // peers // batch
        length = per_epoch * epochs
        return RunConfig("eventgrad", dataset=dataset, model=model or setup["model"], workers=peers,
                         batch_size=batch, steps=min(steps, length) if steps else length, eval_every=per_epoch,
                         train_samples=size["train_samples"], eval_samples=size["eval_samples"], seed=seed + s,
                         device=device, sampling=setup["sampling"], augment=setup["augment"],
                         lr=lr or setup["lr"], momentum=setup["momentum"], **settings)

    studies = size["studies"]
    peers_run = size["peers"] + (size["study_peers"] if studies else ())
    runs = EventGradRuns(seeds=size["seeds"], scale_seeds=size["scale_seeds"], peers=peers_run,
                         epochs=size["epochs"], forced=size["forced"], length_epochs=length_epochs,
                         causes=size["causes"], studies=studies)
    for peers in peers_run:
        for s in size["seeds"] if peers == 4 else size["scale_seeds"]:
            for label, settings in methods(horizon, forced=size["forced"]).items():
                runs.headline[(label, peers, s)] = config(settings, peers, s)
    first = size["seeds"][0]
    event4 = runs.headline[("EventGraD", 4, first)]
    runs.topk[TOPK] = runs.headline[("EventGraD Top-10%", 4, first)]
    runs.gloo = event4.replace(steps=min(event4.steps, GLOO_STEPS), eval_every=min(event4.steps, GLOO_STEPS))
    runs.sweep[("paper", horizon)] = event4
    if length_epochs:
        for label, settings in methods(horizon, forced=size["forced"]).items():
            for s in size["seeds"]:
                runs.length[(label, s)] = config(settings, 4, s, length_epochs)
    cifar = SETUPS["cifar10"]
    if studies:  # the one-seed ablations the "why" column cites
        for fraction in size["topk_sweep"]:
            runs.topk[fraction] = runs.topk[TOPK].replace(
                push_policy=event(horizon, topk=fraction, forced=size["forced"]), push_codec=f"topk(ratio={fraction})")
        for gap in size["max_gaps"]:
            runs.heartbeat[gap] = event4.replace(push_policy=event(horizon, forced=size["forced"], max_gap=gap))
        runs.topk_every = runs.topk[TOPK].replace(push_policy=event(0.0, topk=TOPK, forced=size["forced"]))
        for s in size["seeds"]:
            runs.topk_copy[s] = runs.headline[("EventGraD Top-10%", 4, s)].replace(
                push_policy=event(horizon, topk=TOPK, forced=size["forced"], norm_of="copy"))
        for label in LABELS:
            runs.cifar_optimizer[label] = runs.headline[(label, 4, first)].replace(lr=cifar["lr"],
                                                                                   momentum=cifar["momentum"])
        for rule, horizons in size["sweep"].items():
            for h in horizons:
                runs.sweep[(rule, h)] = config(methods(h, rule, size["forced"])["EventGraD"], 4, first)
    if size["causes"]:  # pinning against a heartbeat, momentum at a matched share: every seed
        runs.max_gap = size["max_gaps"][0]
        for s in size["seeds"]:
            runs.heartbeat_seeds[s] = runs.headline[("EventGraD", 4, s)].replace(
                push_policy=event(horizon, forced=size["forced"], max_gap=runs.max_gap))
            for label in LABELS[:2]:
                runs.momentum[(label, s)] = runs.headline[(label, 4, s)].replace(lr=cifar["lr"],
                                                                                 momentum=cifar["momentum"])
        for h in size["momentum_horizons"]:
            runs.momentum_search[h] = runs.momentum_at(h, first)
    return runs
