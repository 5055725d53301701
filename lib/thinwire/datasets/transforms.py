"""Whole-batch normalisation and augmentation on tensors (no per-image Python loop).

Two standardisations (``STANDARDIZE``): ``channel`` subtracts the data set's mean and divides
by its standard deviation per channel, on pixels scaled to [0, 1]; ``image`` is TensorFlow's
``per_image_standardization`` as the TF CIFAR-10 input pipeline behind MQGrad's code feeds it
(pixel values 0-255 as float): each image minus its own mean, over max(its standard deviation,
1 / sqrt(C*H*W)). ``central_crop`` keeps the central ``size`` x ``size`` pixels (MQGrad's
28x28 crop of CIFAR-10's 32x32 images, the offset rounded down as TF's crop does).
"""

from __future__ import annotations

import torch


def normalize(images: torch.Tensor, mean: tuple[float, ...], std: tuple[float, ...]) -> torch.Tensor:
    """uint8 (N, C, H, W) -> float32, scaled to [0, 1] then standardised per channel."""
    x = images.to(torch.float32).div_(255.0)
    m = torch.tensor(mean, dtype=torch.float32).view(1, -1, 1, 1)
    s = torch.tensor(std, dtype=torch.float32).view(1, -1, 1, 1)
    return x.sub_(m).div_(s)


STANDARDIZE = ("channel", "image")


def central_crop(images: torch.Tensor, size: int) -> torch.Tensor:
    """(N, C, H, W) -> (N, C, size, size), the central pixels; ``size`` 0 keeps the image."""
    h, w = images.shape[-2:]
    if not size or (size == h and size == w):
        return images
    if size > h or size > w:
        raise ValueError(f"crop={size} is not allowed: the images are {h}x{w}, so crop must be 0 or at most {min(h, w)}")
    top, left = (h - size) // 2, (w - size) // 2
    return images[..., top:top + size, left:left + size]


def per_image_standardize(images: torch.Tensor) -> torch.Tensor:
    """uint8 (N, C, H, W) -> float32: TF's per_image_standardization of the 0-255 values."""
    x = images.to(torch.float32)
    flat = x.reshape(x.shape[0], -1)
    mean = flat.mean(1)
    std = flat.std(1, correction=0).clamp(min=flat.shape[1] ** -0.5)
    return x.sub_(mean.view(-1, 1, 1, 1)).div_(std.view(-1, 1, 1, 1))


def prepare(images: torch.Tensor, mean: tuple[float, ...], std: tuple[float, ...], crop: int = 0,
            standardize: str = "channel") -> torch.Tensor:
    """uint8 images as a model sees them: centrally cropped, then standardised."""
    if standardize not in STANDARDIZE:
        raise ValueError(f"standardize={standardize!r} is not allowed: standardize must be one of {list(STANDARDIZE)}")
    images = central_crop(images, crop)
    return normalize(images, mean, std) if standardize == "channel" else per_image_standardize(images)


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
