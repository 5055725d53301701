"""Models by name. Each builder takes the dataset's input shape and class count."""

from __future__ import annotations

from typing import Callable

import torch
from torch import nn

from .mlp import MLP


def _mlp(image_shape, num_classes, hidden=(1024, 1024), activation="relu", layer_norm=False) -> nn.Module:
    c, h, w = image_shape
    return MLP(c * h * w, tuple(hidden), num_classes, activation, layer_norm)


MODELS: dict[str, Callable[..., nn.Module]] = {"mlp": _mlp}


def build_model(name: str, image_shape, num_classes: int, seed: int, **options) -> nn.Module:
    """A freshly initialised model; initialisation draws from a generator seeded by ``seed``."""
    if name not in MODELS:
        raise ValueError(f"model must be one of {sorted(MODELS)}, got {name!r}")
    devices = torch.random.fork_rng(devices=[])
    with devices:
        torch.manual_seed(seed)
        return MODELS[name](image_shape, num_classes, **options)
