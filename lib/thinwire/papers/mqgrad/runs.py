"""Every run of the MQGrad reproduction (Cui et al. 2018), as configs.

Set-up (Sec. 4.1 and the official code, cuiguoxin/MQGrad): the paper's CNN
(``models/architectures.py``) initialised as the code does (``CODE_INIT``), batch 32 per
worker, the server's SGD step (lr 0.2 at the paper profile, 0.1 below it: ``profiles.py``)
applied to the de-quantized average, L2 0.00175 on the two large fully connected weights, gradients
quantized per column (``colquant``) when a tensor is 2-D with more than 105,000 entries,
both directions, on the ``net_10mbs`` network (the paper's 10 MB/s). The inputs are the code's:
the central 28x28 pixels (CIFAR-10's 32x32 cropped; MNIST and Fashion-MNIST are 28x28 already),
each image standardised on its own (TF's per-image standardisation, ``datasets/transforms.py``).

Methods (``METHODS``): Fix(2), Fix(4), Fix(8) (``colquant(bits=K)``), Adaptive (Oland &
Raj's entropy rule on each gradient tensor, c = 5, M = 4, F = 0.03, capped at 8 bits: the
official code has no adaptive baseline and the paper's description is loose, so this rule
is an assumption) and MQGrad (``sarsa_bits`` as the official code sets it up, ``AGENT``).

MQGrad's agent is the official code's: with the paper's text alone (``PAPER_AGENT``: the
loss smoothed from its first value, alpha 0.01, c the window's modelled milliseconds) the
rewards are 2e-4 to 5e-4 while Q(+1) - Q(keep) at the decisions is 0.4 to 0.7 (the Q
network's random initial outputs): the reward cannot move the greedy choice, and the bits
follow the initialisation. The code's agent (Q output std 5e-5, c = 5 + 5 bits ms, the
smoothing from 16 at 0.1) makes rewards of order 1 early, and the Q differences are its
own. The paper's text stays a labelled variant (``LEARNING``); ``shuffled`` makes the
control for the schedule's timing: the same bits per window in a random order.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...experiment import RunConfig
from ..profile import check_profile, check_steps
from ..recipe import Recipe, recipes
from .profiles import MQGRAD

SHAPE = "kernel=5, pool=(3, 2), pool_padding=1, lrn=(9, 0.001, 0.75, 1.0), lrn_at=('pool', 'conv')"
MODELS = {
    "paper": "mqgrad_cnn",                                         # 16.2 M parameters (CIFAR-10)
    "narrow": f"cnn(channels=(8, 8), {SHAPE}, hidden=(576, 960))",  # convs / 8, fc / 4: 98.4% in the two fc
    "small": f"cnn(channels=(4, 4), {SHAPE}, hidden=(540, 200))",   # smoke: fc 196x540, 540x200 (> 105,000)
}
BATCH = 32
LR = 0.2  # the paper's and the code's server step; the profiles below the paper's use 0.1 (profiles.py)
# The code's initialisation (input/cifar10/create_primary_model_using_gradient_descent.py): truncated normals of
# std 5e-2 (convolutions), 0.03 and 0.04 (the two large fully connected layers), 1/fan_in (the output layer);
# biases 0, 0.1, 0.1, 0.1, 0
CODE_INIT = "layers(std=(0.05, 0.05, 0.03, 0.04, 0.0), bias=(0.0, 0.1, 0.1, 0.1, 0.0))"
NETWORK = "net_10mbs"
INPUTS = dict(crop=28, standardize="image")  # the code's central crop and per-image standardisation
QUANTIZED_OVER = 105000   # the code's threshold: 2-D tensors with more entries are quantized
FIXED = (2, 4, 8)
ADAPTIVE = "entropy_bits(c=5, m=4, f=0.03, ceiling=8)"
PAPER_AGENT = "sarsa_bits()"      # the paper's text
# The official code's agent: each departure from the paper's text (policies/sarsa_bits.py)
CODE_AGENT = ("sarsa_bits(hidden=30, activation='tanh', init='code', step=0.05, smoothing=0.1, prior=16.0, "
              "time='code', first='keep', ties='up', explore='up')")
AGENT = CODE_AGENT                # MQGrad's (the module's docstring says why)
WINDOW = 5                        # T: iterations per decision (sarsa_bits' default)
LABELS = ("Fix(2)", "Fix(4)", "Fix(8)", "Adaptive", "MQGrad")


def quantizer(bits: int = 0) -> str:
    """The code's filter around the per-column quantizer; ``bits`` 0: K from a decision."""
    return f"sized(colquant(bits={bits}), min_numel={QUANTIZED_OVER + 1}, ndim=2)"


def methods() -> dict[str, dict]:
    """{label: mqgrad section settings}."""
    out = {f"Fix({b})": dict(push_codec=quantizer(b), pull_codec=quantizer(b), bits_policy="none") for b in FIXED}
    out["Adaptive"] = dict(push_codec=quantizer(), pull_codec=quantizer(), bits_policy=ADAPTIVE)
    out["MQGrad"] = dict(push_codec=quantizer(), pull_codec=quantizer(), bits_policy=AGENT)
    return out


def mqgrad_recipes() -> dict[str, Recipe]:
    """The five methods as recipes (a parameter server, lr 0.2, the 10 MB/s network in the config)."""
    return recipes("mqgrad", {label: ("mqgrad", settings) for label, settings in methods().items()})


@dataclass
class MQGradRuns:
    methods: dict[tuple[str, int], RunConfig] = field(default_factory=dict)   # (label, seed): every method, every seed
    learning: dict[str, RunConfig] = field(default_factory=dict)  # what the learning does: MQGrad variants, 1st seed
    paper_lr: dict[int, RunConfig] = field(default_factory=dict)  # seed -> MQGrad at the paper's lr (when the profile's differs)
    lr_grid: dict[tuple[str, float], RunConfig] = field(default_factory=dict)  # (label, lr): the tuning seed
    seeds: tuple[int, ...] = ()
    gloo: RunConfig | None = None   # a short MQGrad run: in-process vs gloo ranks
    studies: bool = False           # whether learning, paper_lr and lr_grid ran

    def all(self) -> list[RunConfig]:
        seen = {}
        for config in [*self.methods.values(), *self.learning.values(), *self.paper_lr.values(),
                       *self.lr_grid.values()]:
            seen.setdefault(config.key(), config)
        return list(seen.values())


def _agent(**changes) -> str:
    """``AGENT`` with some arguments changed."""
    return AGENT[:-1] + "".join(f", {k}={v!r}" for k, v in changes.items()) + ")"


LEARNING = {  # label -> the agent's spec: how much of MQGrad's behaviour the learned Q makes
    "epsilon 0 (greedy only)": _agent(epsilon=0.0),
    "the paper's text agent": PAPER_AGENT,
    "transition follows the action taken": _agent(transition="taken"),
}
SHUFFLED = "the same bits, shuffled"


def shuffled(mqgrad) -> RunConfig:
    """The control for MQGrad's run ``mqgrad`` (a ``Result``): its config with the bits it
    sent at each decision, in a random order (``shuffled_bits``, the same seed): the same
    bytes, and the same initial model and batches, at other windows."""
    sent = tuple(int(b) for b in mqgrad.metrics["sarsa_bits"] if b is not None)
    return mqgrad.config.replace(bits_policy=f"shuffled_bits(bits={sent}, window={WINDOW})")
GLOO_STEPS = 20
TUNING_SEED = 1000  # the lr grid's seed (after the first seed), apart from the seeds of the tables


def mqgrad_runs(*, profile: str, dataset: str = "mnist", seed: int = 0, device: str = "auto", steps: int = 0,
                model: str = "", network: str = NETWORK, studies: bool = False, lr: float = 0.0) -> MQGradRuns:
    """Validated configs of every table and figure; ``ValueError`` names a bad parameter.
    ``model`` "" takes the profile's; ``steps`` > 0 caps every run (time-capped GPU runs);
    ``studies`` True runs the learning variants, the paper's lr and the lr grid where the
    profile does not (``profiles.py``); ``lr`` > 0 replaces the profile's lr in every run but
    the grid's (the notebook passes the grid's choice, ``lr_grid.chosen_lr``)."""
    check_profile(profile)
    check_steps(steps)
    if not isinstance(studies, bool):
        raise ValueError(f"studies={studies!r} is not allowed: studies must be True or False")
    if not isinstance(lr, (int, float)) or isinstance(lr, bool) or lr < 0:
        raise ValueError(f"lr={lr!r} is not allowed: lr must be a number > 0, or 0 for the profile's")
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"seed={seed!r} is not allowed: seed must be an int >= 0")
    size = {**MQGRAD[profile], "lr": lr or MQGRAD[profile]["lr"]}
    length = min(steps, size["steps"]) if steps else size["steps"]

    def config(settings: dict, s: int) -> RunConfig:
        return RunConfig("mqgrad", dataset=dataset, model=model or MODELS[size["model"]], workers=size["workers"],
                         batch_size=BATCH, steps=length, eval_every=min(size["eval_every"], length),
                         train_samples=size["train_samples"], eval_samples=size["eval_samples"], seed=seed + s,
                         device=device, network=network, lr=size["lr"], init=CODE_INIT, **INPUTS, **settings)

    studies = studies or size["studies"]
    runs = MQGradRuns(seeds=size["seeds"], studies=studies)
    first = size["seeds"][0]
    for label, settings in methods().items():
        for s in size["seeds"]:
            runs.methods[(label, s)] = config(settings, s)
    mq = runs.methods[("MQGrad", first)]
    runs.gloo = mq.replace(steps=min(length, GLOO_STEPS), eval_every=min(length, GLOO_STEPS))
    if not studies:
        return runs
    for label in size["learning"]:
        runs.learning[label] = mq.replace(bits_policy=LEARNING[label])
    if size["lr"] != LR:
        for s in size["paper_lr_seeds"]:
            runs.paper_lr[s] = config(methods()["MQGrad"], s).replace(lr=LR)
    for lr in size["lr_grid"]:  # one lr for every method: the grid on a seed the tables do not use
        for label, settings in methods().items():
            runs.lr_grid[(label, lr)] = config(settings, TUNING_SEED).replace(lr=lr)
    return runs
