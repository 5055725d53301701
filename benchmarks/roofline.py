"""The machine's own memory roofline: one elementwise add over n float32 values
(reads 2n, writes n), timed in the same process as what it is compared with, and the
statistic every CPU benchmark reports: the median call after a warm-up.

A shared machine's memory bandwidth drifts: on one 2-core virtual machine the same add
pass took 5.4 ms in one minute and 9.7 ms in another. A ratio whose two sides were timed
a minute apart measures that drift as much as the codec, so ``interleaved`` times the add
pass and what is compared with it in turns, and each ratio takes the medians of the same
rounds. Each timed call comes right after an untimed call of the same function, so that
it starts from the state a loop of itself leaves (caches, pages, the kernels' threads), as
each timing did before the rounds were interleaved, not from the state the other function
left."""

from __future__ import annotations

import statistics
import time

import torch

REPEATS, WARMUP = 7, 2


def timing(repeats: int = REPEATS, warmup: int = WARMUP, what: str = "calls") -> str:
    """How ``median_seconds`` measured, in words (the tables' provenance); ``what="rounds"``:
    ``interleaved``."""
    if what == "rounds":
        return (f"the median of {repeats} rounds after {warmup} warm-up rounds, each function called twice in a "
                f"row in each round and the second call timed")
    return f"the median of {repeats} {what} after {warmup} warm-up {what if warmup != 1 else what[:-1]}"


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


def add_pass(n: int):
    """One add pass over n float32 values into a reused output, as a function to call."""
    a, b = torch.randn(n), torch.randn(n)
    out = torch.empty(n)
    return lambda: torch.add(a, b, out=out)


def interleaved(fns: dict, repeats: int = REPEATS, warmup: int = WARMUP) -> dict[str, float]:
    """The median wall time of each function of ``fns`` (name: function), called in turns,
    ``repeats`` rounds after ``warmup`` untimed ones; in a round each function is called
    twice in a row and the second call timed."""
    times = {name: [] for name in fns}
    for round_ in range(warmup + repeats):
        for name, fn in fns.items():
            fn()
            t = time.perf_counter()
            fn()
            if round_ >= warmup:
                times[name].append(time.perf_counter() - t)
    return {name: statistics.median(kept) for name, kept in times.items()}
