"""Whole-batch normalisation and augmentation on tensors (no per-image Python loop)."""

from __future__ import annotations

import torch


def normalize(images: torch.Tensor, mean: tuple[float, ...], std: tuple[float, ...]) -> torch.Tensor:
    """uint8 (N, C, H, W) -> float32, scaled to [0, 1] then standardised per channel."""
    x = images.to(torch.float32).div_(255.0)
    m = torch.tensor(mean, dtype=torch.float32).view(1, -1, 1, 1)
    s = torch.tensor(std, dtype=torch.float32).view(1, -1, 1, 1)
    return x.sub_(m).div_(s)


def random_crop_flip(images: torch.Tensor, padding: int, generator: torch.Generator) -> torch.Tensor:
    """Random crop after zero padding, then random horizontal flip (CIFAR recipe)."""
    n, c, h, w = images.shape
    padded = torch.nn.functional.pad(images, (padding,) * 4)
    dy = torch.randint(0, 2 * padding + 1, (n,), generator=generator)
    dx = torch.randint(0, 2 * padding + 1, (n,), generator=generator)
    rows = (dy[:, None] + torch.arange(h))[:, None, :, None]
    cols = (dx[:, None] + torch.arange(w))[:, None, None, :]
    batch = torch.arange(n)[:, None, None, None]
    chan = torch.arange(c)[None, :, None, None]
    cropped = padded[batch, chan, rows, cols]
    flip = torch.rand(n, generator=generator) < 0.5
    return torch.where(flip[:, None, None, None], cropped.flip(-1), cropped)
