"""RunConfig: everything that determines a run's numbers, frozen and validated.

A bad value raises ``ValueError`` naming the parameter, the value and what is allowed,
before any data is read or any model is built. The config's hash keys its results.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, fields

from ..algorithms import ALGORITHMS, OPTIMIZERS
from ..algorithms.plump_dp import PULL_MODES
from ..codecs import make_codec
from ..comm import PRESETS
from ..datasets import LOADERS
from ..models import MODELS
from ..models.mlp import ACTIVATIONS
from ..models.replicas import LOSSES
from .device import DEVICES


RESULTS_FORMAT = 2  # bump when results computed from the same config would differ (wire v2: payload/framing)


def _check(name: str, value, ok: bool, allowed: str) -> None:
    if not ok:
        raise ValueError(f"{name}={value!r} is not allowed: {name} must be {allowed}")


def _int_in(name, value, lo, hi=None):
    ok = isinstance(value, int) and not isinstance(value, bool) and value >= lo and (hi is None or value <= hi)
    _check(name, value, ok, f"an int in [{lo}, {hi if hi is not None else 'inf'})" if hi is None else f"an int in [{lo}, {hi}]")


def _float_in(name, value, lo, hi, lo_open=False):
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and (value > lo if lo_open else value >= lo) and value <= hi
    _check(name, value, ok, f"a number in {'(' if lo_open else '['}{lo}, {hi}]")


def _one_of(name, value, options):
    _check(name, value, value in options, f"one of {sorted(options)}")


@dataclass(frozen=True)
class RunConfig:
    algorithm: str = "plump_dp"        # distributed loop (see thinwire.algorithms)
    dataset: str = "mnist"             # mnist | fashion_mnist | cifar10
    model: str = "mlp"                 # see thinwire.models
    hidden: tuple[int, ...] = (1024, 1024)  # MLP hidden widths
    activation: str = "relu"           # relu | tanh
    layer_norm: bool = False           # LayerNorm after each hidden Linear
    workers: int = 4                   # K local agents
    batch_size: int = 32               # per worker
    steps: int = 100                   # synchronous steps
    train_samples: int = 0             # 0 = whole training set, else the first n of a seeded shuffle
    optimizer: str = "sgd"             # sgd | adagrad
    lr: float = 0.1
    momentum: float = 0.0
    push_codec: str = "fp32"           # codec spec for local -> center messages
    pull_codec: str = "fp32"           # codec spec for center -> local messages
    pull_mode: str = "params"          # params | delta
    network: str = "ethernet_10g"      # network preset for modelled communication time
    eval_every: int = 20               # evaluate the global model every n steps (and at the end)
    eval_samples: int = 10000          # test samples used for evaluation
    seed: int = 0
    device: str = "auto"               # auto | cpu | cuda: where models, batches and codec tensor work live
    # weight_averaging (Oland & Raj) only:
    loss: str = "cross_entropy"        # cross_entropy | mse (tanh outputs, +-1 targets)
    lr_decay: float = 1.0              # lr * lr_decay ** epoch
    l1: float = 0.0                    # L1 regularization strength on weight matrices
    exchange_every: int = 0            # steps between weight exchanges; 0 = once per epoch
    probe_entropy: bool = False        # record the (M, F) grid of entropy estimates at each exchange

    def __post_init__(self):
        object.__setattr__(self, "hidden", tuple(self.hidden))
        _one_of("algorithm", self.algorithm, ALGORITHMS)
        _one_of("dataset", self.dataset, LOADERS)
        _one_of("model", self.model, MODELS)
        _check("hidden", self.hidden, all(isinstance(h, int) and h >= 1 for h in self.hidden),
               "a tuple of positive ints")
        _one_of("activation", self.activation, ACTIVATIONS)
        _check("layer_norm", self.layer_norm, isinstance(self.layer_norm, bool), "True or False")
        _int_in("workers", self.workers, 1, 1024)
        _int_in("batch_size", self.batch_size, 1, 1 << 16)
        _int_in("steps", self.steps, 1)
        _int_in("train_samples", self.train_samples, 0)
        _check("train_samples", self.train_samples,
               self.train_samples == 0 or self.train_samples >= self.workers * self.batch_size,
               f"0 or at least workers * batch_size = {self.workers * self.batch_size}")
        _one_of("optimizer", self.optimizer, OPTIMIZERS)
        _float_in("lr", self.lr, 0.0, 100.0, lo_open=True)
        _float_in("momentum", self.momentum, 0.0, 0.999)
        for name in ("push_codec", "pull_codec"):
            try:
                make_codec(getattr(self, name))
            except (ValueError, TypeError) as exc:
                raise ValueError(f"{name}={getattr(self, name)!r} is not allowed: {exc}") from None
        _one_of("pull_mode", self.pull_mode, PULL_MODES)
        _one_of("network", self.network, PRESETS)
        _int_in("eval_every", self.eval_every, 1)
        _int_in("eval_samples", self.eval_samples, 1, 10000)
        _int_in("seed", self.seed, 0, 2**31 - 1)
        _one_of("device", self.device, DEVICES)
        _one_of("loss", self.loss, LOSSES)
        averaging = self.algorithm == "weight_averaging"
        _check("loss", self.loss, averaging or self.loss == "cross_entropy",
               "'cross_entropy' unless algorithm='weight_averaging'")
        _float_in("lr_decay", self.lr_decay, 0.0, 1.0, lo_open=True)
        _float_in("l1", self.l1, 0.0, 1.0)
        _int_in("exchange_every", self.exchange_every, 0)
        _check("probe_entropy", self.probe_entropy, isinstance(self.probe_entropy, bool), "True or False")
        _check("optimizer", self.optimizer, not averaging or (self.optimizer == "sgd" and self.momentum == 0),
               "'sgd' with momentum 0 when algorithm='weight_averaging' (local steps are plain SGD)")
        for name, default in (("lr_decay", 1.0), ("l1", 0.0), ("exchange_every", 0), ("probe_entropy", False)):
            _check(name, getattr(self, name), averaging or getattr(self, name) == default,
                   f"{default!r} unless algorithm='weight_averaging'")

    def to_dict(self) -> dict:
        d = asdict(self)
        d["hidden"] = list(self.hidden)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> RunConfig:
        known = {f.name for f in fields(cls)}
        unknown = set(d) - known
        if unknown:
            raise ValueError(f"unknown RunConfig parameter(s) {sorted(unknown)}; known: {sorted(known)}")
        return cls(**d)

    def key(self) -> str:
        """Stable 16-hex-digit hash of the config and the results format (the results key)."""
        text = json.dumps({**self.to_dict(), "results_format": RESULTS_FORMAT}, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:16]
