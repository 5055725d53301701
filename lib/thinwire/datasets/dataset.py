"""An in-memory dataset: uint8 images and int64 labels, read once."""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Dataset:
    """Whole splits as tensors: ``images`` uint8 (N, C, H, W), ``labels`` int64 (N,)."""

    name: str
    train_images: torch.Tensor
    train_labels: torch.Tensor
    test_images: torch.Tensor
    test_labels: torch.Tensor
    mean: tuple[float, ...]
    std: tuple[float, ...]
    num_classes: int = 10

    @property
    def image_shape(self) -> tuple[int, int, int]:
        return tuple(self.train_images.shape[1:])

    @property
    def input_size(self) -> int:
        c, h, w = self.image_shape
        return c * h * w
