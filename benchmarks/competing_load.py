"""A competing CPU load like the one that shares machines in practice: other torch
processes running matrix products, each with its own thread pool (torch's default thread
count, so together they ask for more threads than there are cores).

The processes start once and are paused (SIGSTOP) between measurements, so every
measurement with the load runs right after the same measurement without it: the pair sees
the same machine state, and the slowdown is their ratio.
"""

from __future__ import annotations

import os
import resource
import signal
import statistics
import subprocess
import sys
import time
from typing import NamedTuple

LOAD = """
import torch
a = torch.randn(1024, 1024)
print("ready", flush=True)
while True:
    a @ a
"""


class CompetingLoad:
    """``processes`` matmul loops; ``with load.running(): ...`` lets them run."""

    def __init__(self, processes: int = 2):
        self.processes = processes
        self.procs: list[subprocess.Popen] = []

    def __enter__(self):
        env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OMP_WAIT_POLICY")}
        self.procs = [subprocess.Popen([sys.executable, "-c", LOAD], stdout=subprocess.PIPE, env=env)
                      for _ in range(self.processes)]
        for p in self.procs:
            if p.stdout.readline().strip() != b"ready":
                raise RuntimeError("a competing-load process failed to start")
            p.send_signal(signal.SIGSTOP)
        return self

    def __exit__(self, *exc):
        for p in self.procs:
            p.kill()
            p.wait()
        self.procs = []

    def running(self):
        return _Running(self.procs)


class _Running:
    def __init__(self, procs):
        self.procs = procs

    def __enter__(self):
        for p in self.procs:
            p.send_signal(signal.SIGCONT)
        time.sleep(0.3)  # let the loads get their thread pools spinning
        return self

    def __exit__(self, *exc):
        for p in self.procs:
            p.send_signal(signal.SIGSTOP)


class Timing(NamedTuple):
    """Calls of one function: the median wall seconds of a call, and the CPU seconds a call
    used on all of this process's threads (``getrusage``: user and system) with the cores
    that kept busy on average (CPU seconds over wall seconds)."""
    seconds: float
    cpu_seconds: float
    cores: float


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def timing(fn, repeats: int = 7, warmup: int = 1) -> Timing:
    """``repeats`` calls of ``fn()`` after ``warmup``; the median wall time, because under
    load the best call is luck and the median typical."""
    for _ in range(warmup):
        fn()
    times = []
    cpu, wall = _cpu_seconds(), time.perf_counter()
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    cpu, wall = _cpu_seconds() - cpu, time.perf_counter() - wall
    return Timing(statistics.median(times), cpu / repeats, cpu / wall)


def slowdown(fn, load: CompetingLoad, repeats: int = 7) -> tuple[Timing, Timing]:
    """(``fn``'s timing alone, its timing with the load running)."""
    alone = timing(fn, repeats)
    with load.running():
        loaded = timing(fn, repeats)
    return alone, loaded
