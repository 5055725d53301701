"""Convolutional classifiers for the next papers: conv -> ReLU -> max-pool (-> local response
normalization) blocks, then fully connected layers with dropout.

EventGraD trains a two-conv CNN on MNIST; MQGrad and Slim-DP's image baselines use
AlexNet-style networks with LRN on CIFAR-10. One parameterized builder covers them:
``channels`` per conv block, ``kernel`` size, ``hidden`` fully connected widths,
``dropout`` before each hidden-to-next layer and ``lrn`` after each pooling.
"""

from __future__ import annotations

from torch import nn

from .dropout import SeededDropout


class CNN(nn.Module):
    def __init__(self, image_shape: tuple[int, int, int], num_classes: int = 10, channels: tuple[int, ...] = (32, 64),
                 kernel: int = 5, hidden: tuple[int, ...] = (512,), dropout: float = 0.0, lrn: bool = False):
        super().__init__()
        c, h, w = image_shape
        layers: list[nn.Module] = []
        for out in channels:
            layers += [nn.Conv2d(c, out, kernel, padding=kernel // 2), nn.ReLU(), nn.MaxPool2d(2)]
            if lrn:
                layers.append(nn.LocalResponseNorm(size=5, alpha=1e-4, beta=0.75, k=2.0))
            c, h, w = out, h // 2, w // 2
        if h < 1 or w < 1:
            raise ValueError(f"channels={channels!r} is not allowed: {len(channels)} pooling steps shrink a "
                             f"{image_shape[1]}x{image_shape[2]} image below 1x1")
        layers.append(nn.Flatten())
        width = c * h * w
        for size in hidden:
            layers += [nn.Linear(width, size), nn.ReLU(), SeededDropout(dropout)]
            width = size
        layers.append(nn.Linear(width, num_classes))
        self.net = nn.Sequential(*layers)

    def forward(self, x, masks: dict | None = None):
        if masks:
            modules = dict(self.net.named_modules())
            for name, mask in masks.items():
                modules[name.removeprefix("net.")].mask = mask
        try:
            return self.net(x)
        finally:
            if masks:
                for name in masks:
                    modules[name.removeprefix("net.")].mask = None
