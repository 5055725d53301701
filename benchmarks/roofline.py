"""The machine's own memory roofline: one elementwise add over n float32 values
(reads 2n, writes n), timed in the same process as what it is compared with."""

from __future__ import annotations

import time

import torch


def best_seconds(fn, repeats: int = 7, warmup: int = 2) -> float:
    for _ in range(warmup):
        fn()
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def add_pass_seconds(n: int) -> float:
    a, b = torch.randn(n), torch.randn(n)
    out = torch.empty(n)
    return best_seconds(lambda: torch.add(a, b, out=out))
