"""Datasets by name, each read from disk once per process."""

from __future__ import annotations

from functools import lru_cache, partial
from typing import Callable

from ..paths import data_dir
from .cifar10 import load_cifar10
from .dataset import Dataset
from .idx import load_idx_dataset

TRAIN_SIZES = {"mnist": 60000, "fashion_mnist": 60000, "cifar10": 50000}  # checked before any data loads
IMAGE_SHAPES = {"mnist": (1, 28, 28), "fashion_mnist": (1, 28, 28), "cifar10": (3, 32, 32)}  # (and 10 classes each)

LOADERS: dict[str, Callable] = {
    "mnist": partial(load_idx_dataset, "mnist"),
    "fashion_mnist": partial(load_idx_dataset, "fashion-mnist"),
    "cifar10": load_cifar10,
}


def input_shape(name: str, crop: int = 0) -> tuple[int, int, int]:
    """The (C, H, W) a model of data set ``name`` sees after a central ``crop`` (0: none)."""
    c, h, w = IMAGE_SHAPES[name]
    return (c, crop, crop) if crop else (c, h, w)


def load_dataset(name: str) -> Dataset:
    """The dataset ``name`` (one of ``LOADERS``) from ``paths.data_dir()`` (read once per
    folder: a process that points ``THINWIRE_DATA`` elsewhere reads from there)."""
    if name not in LOADERS:
        raise ValueError(f"dataset must be one of {sorted(LOADERS)}, got {name!r}")
    return _load(name, data_dir())


@lru_cache(maxsize=None)
def _load(name: str, folder) -> Dataset:
    return LOADERS[name](folder)
