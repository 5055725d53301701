"""Models by name. Each builder takes the dataset's input shape and class count."""

from __future__ import annotations

from typing import Callable

import torch
from torch import nn

from .architectures import ARCHITECTURES
from .cnn import CNN
from .init import apply_init
from .mlp import MLP


def _mlp(image_shape, num_classes, hidden=(1024, 1024), activation="relu", layer_norm=False, **unused) -> nn.Module:
    c, h, w = image_shape
    return MLP(c * h * w, tuple(hidden), num_classes, activation, layer_norm)


def _cnn(image_shape, num_classes, hidden=(512,), channels=(32, 64), kernel=5, dropout=0.0, lrn=False,
         padding="same", pool=(2, 2), pool_padding=0, lrn_at=None, conv_dropout=None, **unused) -> nn.Module:
    return CNN(tuple(image_shape), num_classes, tuple(channels), kernel, tuple(hidden), dropout, lrn, padding,
               tuple(pool), pool_padding, lrn_at, conv_dropout)


MODELS: dict[str, Callable[..., nn.Module]] = {"mlp": _mlp, "cnn": _cnn, **ARCHITECTURES}


def build_model(name: str, image_shape, num_classes: int, seed: int, init: str = "default", **options) -> nn.Module:
    """A freshly initialised model; initialisation (``init``, ``models/init.py``) draws from a
    generator seeded by ``seed``."""
    if name not in MODELS:
        raise ValueError(f"model={name!r} is not allowed: model must be one of {sorted(MODELS)}")
    devices = torch.random.fork_rng(devices=[])
    with devices:
        torch.manual_seed(seed)
        return apply_init(MODELS[name](image_shape, num_classes, **options), init)
