"""Fully connected classifiers: the MNIST networks of gradient dropping (Sec. 5,
3 x 4096 hidden, optional layer normalization), Oland & Raj (784-392-50-10, tanh)
and the quickstart (784-1024-1024-10), and their spec ``mlp(...)``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from torch import nn

from ..validation import boolean, check, one_of
from .spec import ModelSpec, ints

ACTIVATIONS = {"relu": nn.ReLU, "tanh": nn.Tanh}


class MLP(nn.Module):
    """input -> [Linear -> (LayerNorm) -> activation] x len(hidden) -> Linear -> logits."""

    def __init__(self, input_size: int, hidden: tuple[int, ...], num_classes: int = 10,
                 activation: str = "relu", layer_norm: bool = False):
        super().__init__()
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {sorted(ACTIVATIONS)}, got {activation!r}")
        layers: list[nn.Module] = [nn.Flatten()]
        width = input_size
        for h in hidden:
            layers.append(nn.Linear(width, h))
            if layer_norm:
                layers.append(nn.LayerNorm(h))
            layers.append(ACTIVATIONS[activation]())
            width = h
        layers.append(nn.Linear(width, num_classes))
        self.net = nn.Sequential(*layers)

    def forward(self, x):
        return self.net(x)


@dataclass(frozen=True)
class MLPSpec(ModelSpec):
    """``mlp(hidden=(1024, 1024), activation='relu', layer_norm=False)``: ``hidden`` widths
    (empty: a linear classifier), ``activation`` after each, LayerNorm before it if
    ``layer_norm``."""
    name: ClassVar[str] = "mlp"
    hidden: tuple[int, ...] = (1024, 1024)
    activation: str = "relu"
    layer_norm: bool = False

    def check(self) -> None:
        check("hidden", self.hidden, ints(self.hidden, empty=True), "a tuple of positive ints, e.g. (64,)")
        one_of("activation", self.activation, ACTIVATIONS)
        boolean("layer_norm", self.layer_norm)

    def build(self, image_shape, num_classes: int) -> nn.Module:
        c, h, w = image_shape
        return MLP(c * h * w, self.hidden, num_classes, self.activation, self.layer_norm)
