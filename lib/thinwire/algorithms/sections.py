"""Each algorithm's config section: its own parameters, validated on construction.

``RunConfig`` (``experiment/config.py``) holds the fields every run has (data, model,
workers, steps, device, ...) plus one of these, chosen by ``algorithm``. A section lives
with its algorithm rather than with a paper: Plump-DP serves the quickstart and Slim-DP's
baselines, the sharded server gradient dropping, and a new paper adds its own section in
its own algorithm module.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..policies.core_explorer import check_core_explorer
from ..validation import (boolean, codec_spec, codec_under_policy, float_in, int_in, normalize_numbers, one_of,
                          policy_spec)
from .optimizers import OPTIMIZERS

PULL_MODES = ("params", "delta")
SCHEDULES = ("sync", "async")
SCOPES = ("global", "tensor")
SERVER_SCALES = ("mean", "sum")


@dataclass(frozen=True)
class Section:
    """Base of every section: push and pull codecs, stored in canonical spec form."""

    push_codec: str = "fp32"           # codec spec for worker -> server (or peer) messages
    pull_codec: str = "fp32"           # codec spec for server -> worker messages

    def __post_init__(self):
        normalize_numbers(self)
        for name in ("push_codec", "pull_codec"):
            object.__setattr__(self, name, codec_spec(name, getattr(self, name)))


@dataclass(frozen=True)
class ParameterServerSection(Section):
    """Plump-DP's center agent and the sharded parameter server (gradient dropping)."""

    optimizer: str = "sgd"             # sgd | adagrad, applied by the server(s)
    lr: float = 0.1
    momentum: float = 0.0              # SGD momentum (server side)
    weight_decay: float = 0.0          # L2 weight decay (server side)
    adagrad_eps: float = 1e-10         # AdaGrad's epsilon (torch's default)
    pull_mode: str = "params"          # params | delta (changes since the copy the workers hold)

    def __post_init__(self):
        super().__post_init__()
        for name in ("push_codec", "pull_codec"):  # these servers ask no policy: the codecs decide alone
            codec_under_policy(name, getattr(self, name))
        one_of("optimizer", self.optimizer, OPTIMIZERS)
        float_in("lr", self.lr, 0.0, 100.0, lo_open=True)
        float_in("momentum", self.momentum, 0.0, 0.999)
        float_in("weight_decay", self.weight_decay, 0.0, 1.0)
        float_in("adagrad_eps", self.adagrad_eps, 0.0, 1.0, lo_open=True)
        one_of("pull_mode", self.pull_mode, PULL_MODES)


@dataclass(frozen=True)
class ShardedPSSection(ParameterServerSection):
    """The sharded parameter server of gradient dropping: the server fields plus the two
    settings of Marian's asynchronous implementation (``sharded_ps.py`` says how each works)."""

    schedule: str = "sync"             # sync: one averaged update per step | async: one update per push
    warmup_steps: int = 0              # first steps sent dense (float32) before the codecs apply; Marian: 100

    def __post_init__(self):
        super().__post_init__()
        one_of("schedule", self.schedule, SCHEDULES)
        int_in("warmup_steps", self.warmup_steps, 0, 10**9)


@dataclass(frozen=True)
class WeightAveragingSection(Section):
    """Oland & Raj's averaging workers: local SGD, compressed exchanges."""

    lr: float = 0.1
    momentum: float = 0.0              # local SGD momentum, per worker
    weight_decay: float = 0.0          # local L2 weight decay, per worker
    lr_decay: float = 1.0              # lr * lr_decay ** epoch
    l1: float = 0.0                    # L1 regularization strength on weight matrices
    exchange_every: int = 0            # steps between weight exchanges; 0 = once per epoch
    probe_entropy: bool = False        # record the (M, F) grid of entropy estimates at each exchange
    push_policy: str = "always"        # what each worker sends: always | entropy_bits(c=.., m=.., f=.., ceiling=..) | ...
    pull_policy: str = "always"        # how the averaging agent decides on its re-compressed average

    def __post_init__(self):
        super().__post_init__()
        for name in ("push_policy", "pull_policy"):
            object.__setattr__(self, name, policy_spec(name, getattr(self, name)))
        for side in ("push", "pull"):
            codec_under_policy(f"{side}_codec", getattr(self, f"{side}_codec"), f"{side}_policy",
                               getattr(self, f"{side}_policy"))
        float_in("lr", self.lr, 0.0, 100.0, lo_open=True)
        float_in("momentum", self.momentum, 0.0, 0.999)
        float_in("weight_decay", self.weight_decay, 0.0, 1.0)
        float_in("lr_decay", self.lr_decay, 0.0, 1.0, lo_open=True)
        float_in("l1", self.l1, 0.0, 1.0)
        int_in("exchange_every", self.exchange_every, 0)
        boolean("probe_entropy", self.probe_entropy)


@dataclass(frozen=True)
class SlimDPSection(Section):
    """Slim-DP's local and center agents (``slim_dp.py``): the communication set (alpha),
    the explorer (epsilon), the core refresh period (q) and how the center applies pushes."""

    push_codec: str = "keycache"       # Slim-DP's wire: cached core keys + explorer (key, value) pairs
    pull_codec: str = "keycache"
    alpha: float = 0.3                 # communication set: alpha * N coordinates per message
    epsilon: float = 0.15              # explorer: epsilon * N random coordinates outside the core (epsilon <= alpha)
    refresh: int = 10                  # q: rounds between core selections (the core's keys are cached between)
    selection: str = "exact"           # exact (top-k) | sampled (threshold from a random sample)
    scope: str = "global"              # global: one selection over the whole model | tensor: one per parameter tensor
    lr: float = 0.1                    # eta: local SGD step and the center's step
    momentum: float = 0.0              # the center's SGD momentum
    weight_decay: float = 0.0          # the center's L2 weight decay
    server_scale: str = "mean"         # the center adds lr * (mean | sum) of the pushed gradients
    local_update: bool = True          # local agents keep their own SGD step on coordinates they did not pull

    def __post_init__(self):
        super().__post_init__()
        for name in ("push_codec", "pull_codec"):
            if getattr(self, name) != "keycache":
                raise ValueError(f"{name}={getattr(self, name)!r} is not allowed: Slim-DP sends through the key "
                                 "cache, so it must be 'keycache'")
        check_core_explorer(self.alpha, self.epsilon, self.refresh, self.selection)
        one_of("scope", self.scope, SCOPES)
        float_in("lr", self.lr, 0.0, 100.0, lo_open=True)
        float_in("momentum", self.momentum, 0.0, 0.999)
        float_in("weight_decay", self.weight_decay, 0.0, 1.0)
        one_of("server_scale", self.server_scale, SERVER_SCALES)
        boolean("local_update", self.local_update)
