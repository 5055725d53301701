"""Model specs by name (``mlp``, ``cnn``, ``resnet``, the papers' named networks), the parser of
model specs and ``build_model``.

    make_model("cnn(channels=(10, 20), kernel=3)")  -> CNNSpec(...)
    build_model("mlp(hidden=(64,))", (1, 28, 28), 10, seed=0)  -> nn.Module

A network of your own is a ``ModelSpec`` subclass registered with ``register_model`` (in a
plug-in module, so that every process knows it: ``thinwire.plugins``).
"""

from __future__ import annotations

import torch
from torch import nn

from ..spec_syntax import dataclass_build
from .architectures import ARCHITECTURES
from .cnn import CNNSpec
from .init import apply_init
from .mlp import MLPSpec
from .resnet import ResNetSpec
from .spec import ModelSpec

MODELS: dict[str, type[ModelSpec]] = {cls.name: cls for cls in (MLPSpec, CNNSpec, ResNetSpec, *ARCHITECTURES)}


def register_model(cls: type[ModelSpec]) -> type[ModelSpec]:
    """Class decorator: make the spec class ``cls`` known to ``make_model`` under ``cls.name``."""
    if not (isinstance(cls, type) and issubclass(cls, ModelSpec) and isinstance(cls.name, str)
            and cls.name.isidentifier()):
        raise ValueError(f"register_model({cls!r}) is not allowed: it takes a ModelSpec subclass with a name that "
                         "is an identifier")
    MODELS[cls.name] = cls
    return cls


def make_model(spec: str | ModelSpec) -> ModelSpec:
    """The validated spec of ``spec``; ``ValueError`` names what is wrong."""
    if isinstance(spec, ModelSpec):
        return spec
    return dataclass_build(spec, "model", MODELS, "model")


def check_model(spec) -> str:
    """The canonical text of a model spec; ``ValueError`` names a bad one."""
    return make_model(spec).spec()


def build_model(spec: str | ModelSpec, image_shape, num_classes: int, seed: int, init: str = "default") -> nn.Module:
    """A freshly initialised model; initialisation (``init``, ``models/init.py``) draws from a
    generator seeded by ``seed``."""
    model = make_model(spec)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return apply_init(model.build(image_shape, num_classes), init)
