"""Every run of the Slim-DP reproduction (Sun et al. 2018), and the settings they share.

Setup: the issue's MLP (784-hidden-10, ReLU, the width per profile), MNIST or
Fashion-MNIST, K local agents with 32 samples each, synchronous SGD lr 0.1, p = 1.
- Plump-DP: every gradient pushed and every parameter pulled in float32 (``plump_dp``).
- Quant-DP: the same with QSGD (8 bits, bucket 512, Sec. 4.2) in both directions. The
  pull sends the change of the global model since the copy the local agents hold, kept
  by the center (``pull_mode="delta"``), so quantization errors of the pulls do not pile
  up in the local models: quantizing pushes alone could not save Table 1's share, and
  quantizing the parameters themselves would add fresh noise to every weight each round.
- Slim-DP: (alpha, epsilon) = (0.2, 0.1) (VGG-16's), (0.3, 0.15) (GoogLeNet's) and
  (0.5, 0.25) (Fig. 5), the core refreshed every q rounds (``refresh``, 10 by default:
  the paper does not give q).
Headline runs over three seeds: every method at K = 4, and Table 1's (Plump-DP, Quant-DP
and the paper's two Slim-DP settings) at K = 8; (0.5, 0.25) is Fig. 5's, at K = 4. The
studies (``studies``; the smoke and paper profiles run them, the default profile quotes
them from ``quoted.STUDIES_RUN``), at K = 4 on the first seed: the epsilon sweep at alpha =
0.3 (Fig. 4), the refresh period q (key-cache cost), an ablation of the gap to Plump-DP
(q = 1, ``length`` x the rounds on ``length_seeds`` seeds, the center's sum against
Plump-DP at lr x K (the same reading for both), no local update), Quant-DP in QSGD's own
Elias coding, and the codec work alone at the paper's sizes (``scale_sizes``). Configs
shared between groups are equal, so they run once.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...codecs import make_codec
from ...experiment import RunConfig
from ...validation import check
from ..profile import check_profile, check_steps
from ..recipe import Recipe, recipes
from .profiles import SLIM_DP

PLUMP, QUANT = "Plump-DP", "Quant-DP"
SETTINGS = ((0.2, 0.1), (0.3, 0.15), (0.5, 0.25))   # Table 1 (VGG-16, GoogLeNet) and Fig. 5
HEADLINE = (0.3, 0.15)                               # the paper's GoogLeNet setting, swept around
EPSILONS = (0.0, 0.075, 0.15, 0.225, 0.3)            # Fig. 4 at alpha = 0.3
REFRESHES = (1, 10, 50)                              # q: rounds between core selections
WORKERS = (4, 8)
SEEDS = 3
LONGER = 4                                           # the training-length ablation's default: 4x the rounds
LENGTH_SEEDS = 3                                     # ... on the three seeds


def slim_label(alpha: float, epsilon: float) -> str:
    return f"Slim-DP ({alpha:g}, {epsilon:g})"


METHODS = (PLUMP, QUANT, *(slim_label(a, e) for a, e in SETTINGS))
TABLE1 = METHODS[:4]                                 # Plump-DP, Quant-DP, the VGG-16 and GoogLeNet settings


def methods_at(k: int) -> tuple[str, ...]:
    """The methods the headline runs at K = ``k``: all at 4, Table 1's at 8."""
    return METHODS if k == WORKERS[0] else TABLE1


@dataclass
class SlimDPRuns:
    headline: dict[tuple[int, str, int], RunConfig] = field(default_factory=dict)  # (K, method, seed)
    epsilon: dict[float, RunConfig] = field(default_factory=dict)                  # Fig. 4, alpha 0.3, K 4
    refresh: dict[int, RunConfig] = field(default_factory=dict)                    # q sweep at HEADLINE, K 4
    ablation: dict[str, list[tuple[RunConfig, RunConfig]]] = field(default_factory=dict)  # [(Slim-DP, Plump-DP)]
    gloo: RunConfig | None = None                                                   # the same on torch.distributed
    elias: dict[int, RunConfig] = field(default_factory=dict)                       # K -> Quant-DP, Elias-coded, first rounds
    scale_sizes: tuple[int, ...] = ()                                               # N of the codec-only measurement
    workers: tuple[int, ...] = WORKERS
    seeds: tuple[int, ...] = ()
    studies: bool = False                                                           # the studies ran (not quoted)

    def in_process(self) -> dict[str, dict]:
        pairs = {(label, role, i): c for label, seeded in self.ablation.items() for i, pair in enumerate(seeded)
                 for role, c in zip(("slim", "plump"), pair)}
        return {"headline": self.headline, "epsilon": self.epsilon, "refresh": self.refresh, "ablation": pairs,
                "elias": self.elias}

    def methods(self, k: int) -> tuple[str, ...]:
        return methods_at(k)

    def results_of(self, done: dict, k: int, method: str) -> list:
        """The headline results of ``method`` at K = ``k``, one per seed."""
        return [done["headline"][(k, method, s)] for s in self.seeds]


def slim_dp_recipes(*, refresh: int = 10, selection: str = "exact", scope: str = "global", local_update: bool = True,
                    server_scale: str = "mean", quant_bits: int = 8) -> dict[str, Recipe]:
    """Plump-DP, Quant-DP and Slim-DP at each of ``SETTINGS`` as recipes (SGD, lr 0.1); the
    options are Slim-DP's (``SlimDPSection``) and Quant-DP's bit width."""
    check("quant_bits", quant_bits, isinstance(quant_bits, int) and not isinstance(quant_bits, bool)
          and 2 <= quant_bits <= 16, "an int in 2..16")
    qsgd = f"qsgd(bits={quant_bits}, bucket=512)"
    slim = dict(refresh=refresh, selection=selection, scope=scope, local_update=local_update,
                server_scale=server_scale, lr=0.1)
    return recipes("slim_dp", {
        PLUMP: ("plump_dp", dict(optimizer="sgd", lr=0.1)),
        QUANT: ("plump_dp", dict(optimizer="sgd", lr=0.1, push_codec=qsgd, pull_codec=qsgd, pull_mode="delta")),
        **{slim_label(a, e): ("slim_dp", dict(slim, alpha=a, epsilon=e)) for a, e in SETTINGS}})


def slim_dp_runs(*, profile: str, dataset: str = "mnist", network: str = "ethernet_10g", seed: int = 0,
                 device: str = "auto", steps: int = 0, refresh: int = 10, selection: str = "exact", scope: str = "global", local_update: bool = True,
                 server_scale: str = "mean", quant_bits: int = 8, length: int = LONGER,
                 length_seeds: int = LENGTH_SEEDS, studies: bool = False) -> SlimDPRuns:
    """Validated configs for every figure and table; ``ValueError`` names a bad parameter
    before anything runs. ``steps`` > 0 caps every run's length (time-capped runs of a
    large profile); ``length``: how many times the profile's rounds the training-length
    ablation runs, on ``length_seeds`` of the three seeds; ``studies`` True runs the
    epsilon sweep, the refresh sweep, the gap ablation, the Elias coding and the codec work
    at the paper's sizes (the profile's ``studies`` also does); the other options are Slim-DP's and Quant-DP's (``SlimDPSection``,
    ``qsgd``)."""
    size = dict(SLIM_DP[check_profile(profile)])
    gloo_steps, elias_steps, scale_sizes = size.pop("gloo_steps"), size.pop("elias_steps"), size.pop("scale_sizes")
    check("studies", studies, isinstance(studies, bool), "True or False")
    studies = size.pop("studies") or studies
    if check_steps(steps):
        size["steps"], size["eval_every"] = min(size["steps"], steps), min(size["eval_every"], steps)
    methods = slim_dp_recipes(refresh=refresh, selection=selection, scope=scope, local_update=local_update,
                              server_scale=server_scale, quant_bits=quant_bits)
    check("length", length, isinstance(length, int) and not isinstance(length, bool) and 2 <= length <= 100,
          "an int in 2..100 (times the profile's rounds)")
    check("length_seeds", length_seeds, isinstance(length_seeds, int) and not isinstance(length_seeds, bool)
          and 1 <= length_seeds <= SEEDS, f"an int in 1..{SEEDS}")
    common = dict(dataset=dataset, batch_size=32, network=network, device=device, **size)
    runs = SlimDPRuns(seeds=tuple(seed + i for i in range(SEEDS)), studies=studies)
    for k in WORKERS:
        for s in runs.seeds:
            for label in methods_at(k):
                runs.headline[(k, label, s)] = methods[label].apply(common, workers=k, seed=s)
    first = runs.headline[(WORKERS[0], slim_label(*HEADLINE), seed)]
    if studies:
        for epsilon in EPSILONS:
            runs.epsilon[epsilon] = first.replace(epsilon=epsilon)
        for q in REFRESHES:
            runs.refresh[q] = first.replace(refresh=q)
        # why Slim-DP trails Plump-DP: each setting the paper leaves open, changed one at a time
        plump = runs.headline[(WORKERS[0], PLUMP, seed)]
        longer = dict(steps=length * first.steps, eval_every=length * first.eval_every)
        runs.ablation = {
            "as run": [(first, plump)],
            "core refreshed every round (q = 1)": [(first.replace(refresh=1), plump)],
            f"{length}x the rounds": [(first.replace(seed=s, **longer), plump.replace(seed=s, **longer))
                                      for s in runs.seeds[:length_seeds]],
            "sum at the center; Plump-DP at lr x K": [(first.replace(server_scale="sum"),
                                                        plump.replace(lr=plump.lr * plump.workers))],
            "no local update": [(first.replace(local_update=False), plump)],
        }
        runs.scale_sizes = scale_sizes
    n = min(gloo_steps, first.steps)
    runs.gloo = first.replace(steps=n, eval_every=n, eval_samples=min(1000, first.eval_samples))
    if studies:  # QSGD's own coding of Quant-DP's messages: the first rounds of the first seed again
        elias_steps = min(elias_steps, first.steps)
        for k in runs.workers:
            quant = runs.headline[(k, QUANT, seed)]
            runs.elias[k] = quant.replace(steps=elias_steps, eval_every=elias_steps,
                                          push_codec=elias_coded(quant.push_codec), pull_codec=elias_coded(quant.pull_codec))
    return runs


def elias_coded(spec: str) -> str:
    """A ``qsgd(...)`` spec with QSGD's own Elias coding (``codecs/quantize/qsgd.py``)."""
    codec = make_codec(spec)
    return type(codec)(**{**codec.params(), "coding": "elias"}).spec()
