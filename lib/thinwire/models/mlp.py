"""Fully connected classifiers: the MNIST networks of gradient dropping (Sec. 5,
3 x 4096 hidden, optional layer normalization), Oland & Raj (784-392-50-10, tanh)
and the quickstart (784-1024-1024-10)."""

from __future__ import annotations

from torch import nn

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
