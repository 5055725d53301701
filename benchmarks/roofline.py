"""The machine's own memory roofline: one elementwise add over n float32 values
(reads 2n, writes n), timed in the same process as what it is compared with, and the
statistic every CPU benchmark reports: the median call after a warm-up."""

from __future__ import annotations

import statistics
import time

import torch

REPEATS, WARMUP = 7, 2


def timing(repeats: int = REPEATS, warmup: int = WARMUP) -> str:
    """How ``median_seconds`` measured, in words (the tables' provenance)."""
    return f"the median of {repeats} calls after {warmup} warm-up call{'s' if warmup != 1 else ''}"


def call_seconds(fn, repeats: int = REPEATS, warmup: int = WARMUP) -> list[float]:
    """The wall time of each of ``repeats`` calls of ``fn`` after ``warmup`` untimed ones."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return times


def median_seconds(fn, repeats: int = REPEATS, warmup: int = WARMUP) -> float:
    """The median of ``call_seconds``."""
    return statistics.median(call_seconds(fn, repeats, warmup))


def add_pass_seconds(n: int) -> float:
    a, b = torch.randn(n), torch.randn(n)
    out = torch.empty(n)
    return median_seconds(lambda: torch.add(a, b, out=out))
