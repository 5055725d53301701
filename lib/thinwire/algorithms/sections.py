"""Each algorithm's config section: its own parameters, validated on construction.

``RunConfig`` (``experiment/config.py``) holds the fields every run has (data, model,
workers, steps, device, ...) plus one of these, chosen by ``algorithm``. A section lives
with its algorithm rather than with a paper: Plump-DP serves the quickstart and Slim-DP's
baselines, the sharded server gradient dropping, and a new paper adds its own section in
its own algorithm module.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..validation import boolean, codec_spec, float_in, int_in, normalize_numbers, one_of, policy_spec
from .optimizers import OPTIMIZERS

PULL_MODES = ("params", "delta")
SCHEDULES = ("sync", "async")


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
        float_in("lr", self.lr, 0.0, 100.0, lo_open=True)
        float_in("momentum", self.momentum, 0.0, 0.999)
        float_in("weight_decay", self.weight_decay, 0.0, 1.0)
        float_in("lr_decay", self.lr_decay, 0.0, 1.0, lo_open=True)
        float_in("l1", self.l1, 0.0, 1.0)
        int_in("exchange_every", self.exchange_every, 0)
        boolean("probe_entropy", self.probe_entropy)
