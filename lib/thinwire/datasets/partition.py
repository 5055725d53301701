"""Splitting a training set across K workers, and each worker's mini-batch stream."""

from __future__ import annotations

import torch

from .transforms import AUGMENTS, CROP_PADDING, random_crop_flip

SAMPLINGS = ("shuffled", "sequential")


def partition(num_samples: int, workers: int, seed: int, sampling: str = "shuffled") -> list[torch.Tensor]:
    """Disjoint, equally sized index shards (the remainder is dropped): seeded
    (``"shuffled"``), or contiguous ranges in data-set order (``"sequential"``: worker k
    gets samples [k n, (k + 1) n), as libtorch's ``DistributedSequentialSampler`` does)."""
    if workers < 1 or workers > num_samples:
        raise ValueError(f"workers must be in 1..{num_samples}, got {workers}")
    if sampling not in SAMPLINGS:
        raise ValueError(f"sampling={sampling!r} is not allowed: sampling must be one of {list(SAMPLINGS)}")
    order = (torch.randperm(num_samples, generator=torch.Generator().manual_seed(seed)) if sampling == "shuffled"
             else torch.arange(num_samples))
    per = num_samples // workers
    return [order[k * per:(k + 1) * per].clone() for k in range(workers)]


class BatchStream:
    """Endless mini-batches of one shard, reshuffled every epoch with its own generator
    (``shuffle``), or in the shard's own order every epoch; ``augment`` draws each batch's
    crops and flips from a second generator (``augment_seed``), padding with ``fill``."""

    def __init__(self, shard: torch.Tensor, batch_size: int, seed: int, shuffle: bool = True, augment: str = "none",
                 augment_seed: int = 0, fill: torch.Tensor | None = None):
        if augment not in AUGMENTS:
            raise ValueError(f"augment={augment!r} is not allowed: augment must be one of {list(AUGMENTS)}")
        self.augment = augment
        self.fill = fill
        self.augment_generator = torch.Generator().manual_seed(augment_seed)
        if batch_size < 1 or batch_size > shard.numel():
            raise ValueError(f"batch_size must be in 1..{shard.numel()} (the shard size), got {batch_size}")
        self.shard = shard
        self.batch_size = batch_size
        self.generator = torch.Generator().manual_seed(seed)
        self.shuffle = shuffle
        self.batches_per_epoch = shard.numel() // batch_size
        self._order = torch.empty(0, dtype=torch.long)
        self._next = self.batches_per_epoch

    def next_indices(self) -> torch.Tensor:
        if self._next >= self.batches_per_epoch:
            self._order = (self.shard[torch.randperm(self.shard.numel(), generator=self.generator)] if self.shuffle
                           else self.shard)
            self._next = 0
        b = self._next * self.batch_size
        self._next += 1
        return self._order[b:b + self.batch_size]

    def augmented(self, images: torch.Tensor) -> torch.Tensor:
        """A batch's images as training sees them: as they are, or cropped and flipped."""
        if self.augment == "none":
            return images
        return random_crop_flip(images, CROP_PADDING, self.augment_generator, self.fill)

    def state_dict(self) -> dict:
        return {"generator": self.generator.get_state(), "order": self._order.clone(), "next": self._next,
                "augment_generator": self.augment_generator.get_state()}

    def load_state_dict(self, state: dict) -> None:
        self.generator.set_state(state["generator"])
        if "augment_generator" in state:
            self.augment_generator.set_state(state["augment_generator"])
        self._order = state["order"].clone()
        self._next = state["next"]
