"""Model specs: a network named as text in the codecs' syntax, ``mlp(hidden=(64,))`` or
``cnn(channels=(10, 20), kernel=3, padding='valid')``.

A spec class is a frozen dataclass whose fields are the network's options; ``check``
validates them (``ValueError`` naming the field, the value and what is allowed) before any
data is read, and ``build`` makes the ``nn.Module`` for an input shape and class count.
``spec()`` prints the canonical text (the options that differ from the defaults, in field
order), so equal networks give equal configs and one results key.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar

from torch import nn

from ..spec_syntax import dataclass_text


@dataclass(frozen=True)
class ModelSpec:
    name: ClassVar[str] = ""

    def __post_init__(self):
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, list):
                object.__setattr__(self, f.name, tuple(value))
            elif f.type in ("float", float) and isinstance(value, int) and not isinstance(value, bool):
                object.__setattr__(self, f.name, float(value))
        self.check()

    def check(self) -> None:
        """Raise ``ValueError`` naming a bad option."""

    def build(self, image_shape: tuple[int, int, int], num_classes: int) -> nn.Module:
        raise NotImplementedError

    def replace(self, **changes) -> ModelSpec:
        """A validated copy with ``changes`` to its options."""
        return dataclasses.replace(self, **changes)

    def spec(self) -> str:
        return dataclass_text(self.name, self)

    def __str__(self) -> str:
        return self.spec()


def ints(value, least: int = 1, empty: bool = False) -> bool:
    """Whether ``value`` is a tuple of ints >= ``least`` (non-empty unless ``empty``)."""
    return (isinstance(value, tuple) and (empty or len(value) >= 1)
            and all(isinstance(v, int) and not isinstance(v, bool) and v >= least for v in value))


def per_block(name: str, value, blocks: int) -> None:
    """``value``, if given, must have one entry per conv block."""
    if value is not None and (not isinstance(value, tuple) or len(value) != blocks):
        raise ValueError(f"{name}={value!r} is not allowed: {name} must be None or a tuple with one entry per conv "
                         f"block ({blocks})")
