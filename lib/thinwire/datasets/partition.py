"""Splitting a training set across K workers, and each worker's mini-batch stream."""

from __future__ import annotations

import torch


def partition(num_samples: int, workers: int, seed: int) -> list[torch.Tensor]:
    """Disjoint, equally sized index shards (the remainder is dropped), seeded."""
    if workers < 1 or workers > num_samples:
        raise ValueError(f"workers must be in 1..{num_samples}, got {workers}")
    order = torch.randperm(num_samples, generator=torch.Generator().manual_seed(seed))
    per = num_samples // workers
    return [order[k * per:(k + 1) * per].clone() for k in range(workers)]


class BatchStream:
    """Endless mini-batches of one shard, reshuffled every epoch with its own generator."""

    def __init__(self, shard: torch.Tensor, batch_size: int, seed: int):
        if batch_size < 1 or batch_size > shard.numel():
            raise ValueError(f"batch_size must be in 1..{shard.numel()} (the shard size), got {batch_size}")
        self.shard = shard
        self.batch_size = batch_size
        self.generator = torch.Generator().manual_seed(seed)
        self.batches_per_epoch = shard.numel() // batch_size
        self._order = torch.empty(0, dtype=torch.long)
        self._next = self.batches_per_epoch

    def next_indices(self) -> torch.Tensor:
        if self._next >= self.batches_per_epoch:
            self._order = self.shard[torch.randperm(self.shard.numel(), generator=self.generator)]
            self._next = 0
        b = self._next * self.batch_size
        self._next += 1
        return self._order[b:b + self.batch_size]

    def state_dict(self) -> dict:
        return {"generator": self.generator.get_state(), "order": self._order.clone(), "next": self._next}

    def load_state_dict(self, state: dict) -> None:
        self.generator.set_state(state["generator"])
        self._order = state["order"].clone()
        self._next = state["next"]
