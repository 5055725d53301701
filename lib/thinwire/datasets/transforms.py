"""Whole-batch normalisation and augmentation on tensors (no per-image Python loop)."""

from __future__ import annotations

import torch


def normalize(images: torch.Tensor, mean: tuple[float, ...], std: tuple[float, ...]) -> torch.Tensor:
    """uint8 (N, C, H, W) -> float32, scaled to [0, 1] then standardised per channel."""
    x = images.to(torch.float32).div_(255.0)
    m = torch.tensor(mean, dtype=torch.float32).view(1, -1, 1, 1)
    s = torch.tensor(std, dtype=torch.float32).view(1, -1, 1, 1)
    return x.sub_(m).div_(s)


AUGMENTS = ("none", "crop_flip")
CROP_PADDING = 4  # pixels on each side before the random crop (the CIFAR-10 recipe)


def random_crop_flip(images: torch.Tensor, padding: int, generator: torch.Generator,
                     fill: torch.Tensor | None = None) -> torch.Tensor:
    """Random crop after padding, then random horizontal flip (the CIFAR recipe; EventGraD's
    CIFAR-10 code pads 4, flips, then crops 32x32). ``fill``: the padding value per
    channel (default 0); offsets and flips are drawn on the CPU from ``generator``, one per
    image, so a batch gets the same draws on every device."""
    n, c, h, w = images.shape
    fill = torch.zeros(c) if fill is None else fill
    padded = fill.to(images).view(1, c, 1, 1).expand(n, c, h + 2 * padding, w + 2 * padding).clone()
    padded[:, :, padding:padding + h, padding:padding + w] = images
    dy = torch.randint(0, 2 * padding + 1, (n,), generator=generator).to(images.device)
    dx = torch.randint(0, 2 * padding + 1, (n,), generator=generator).to(images.device)
    flip = (torch.rand(n, generator=generator) < 0.5).to(images.device)
    arange_h, arange_w = torch.arange(h, device=images.device), torch.arange(w, device=images.device)
    rows = (dy[:, None] + arange_h)[:, None, :, None]
    cols = (dx[:, None] + arange_w)[:, None, None, :]
    batch = torch.arange(n, device=images.device)[:, None, None, None]
    chan = torch.arange(c, device=images.device)[None, :, None, None]
    cropped = padded[batch, chan, rows, cols]
    return torch.where(flip[:, None, None, None], cropped.flip(-1), cropped)
