"""Dropout whose masks come from each agent's own generator.

``nn.Dropout`` draws from the global RNG, and under ``vmap`` every replica would share or
race for it. Here each ``SeededDropout`` layer takes its mask from outside: ``Replicas``
draws one mask per replica from that agent's ``torch.Generator`` (so an agent drops the
same units whether it runs batched in one process or alone on a gloo rank) and hands the
masks in through ``masks`` (layer name -> mask). In eval mode the layer is the identity.
"""

from __future__ import annotations

import torch
from torch import nn


class SeededDropout(nn.Module):
    """``channels``: drop whole feature maps (``nn.Dropout2d``'s rule: one draw per sample
    and channel) instead of single values."""

    def __init__(self, p: float, channels: bool = False):
        super().__init__()
        if not (isinstance(p, (int, float)) and not isinstance(p, bool) and 0 <= p < 1):
            raise ValueError(f"dropout={p!r} is not allowed: dropout must be a probability in [0, 1)")
        self.p, self.channels = float(p), channels
        self.mask: torch.Tensor | None = None  # set for one forward pass by the model

    def forward(self, x):
        if not self.training or self.p == 0:
            return x
        if self.mask is None:
            raise RuntimeError("SeededDropout in training mode needs a mask drawn from its agent's generator "
                               "(Replicas supplies it); call model.eval() to evaluate")
        return x * self.mask

    def mask_shape(self, features: tuple[int, ...]) -> tuple[int, ...]:
        """The shape of one sample's mask for inputs of shape ``features`` (C, H, W, ...)."""
        return (features[0], *[1] * (len(features) - 1)) if self.channels else features

    def draw(self, shape: tuple[int, ...], generator: torch.Generator, device) -> torch.Tensor:
        """A scaled keep-mask (1/(1-p) where kept, 0 where dropped) of ``shape``."""
        keep = torch.rand(shape, generator=generator, device=generator.device) >= self.p
        return keep.to(device=device, dtype=torch.float32) / (1 - self.p)


def dropout_layers(model: nn.Module) -> dict[str, SeededDropout]:
    return {name: m for name, m in model.named_modules() if isinstance(m, SeededDropout) and m.p > 0}
