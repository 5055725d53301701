"""A competing CPU load like the one that shares machines in practice: other torch
processes running matrix products, each with its own thread pool (torch's default thread
count, so together they ask for more threads than there are cores).

The processes start once and are paused (SIGSTOP) between measurements, so every
measurement with the load runs right after the same measurement without it: the pair sees
the same machine state, and the slowdown is their ratio.
"""

from __future__ import annotations

import os
import signal
import statistics
import subprocess
import sys
import time

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


def median_seconds(fn, repeats: int = 7, warmup: int = 1) -> float:
    """Median wall time of ``fn()``: under load the best run is luck, the median is typical."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def slowdown(fn, load: CompetingLoad, repeats: int = 7) -> tuple[float, float]:
    """(median seconds alone, median seconds with the load running)."""
    alone = median_seconds(fn, repeats)
    with load.running():
        loaded = median_seconds(fn, repeats)
    return alone, loaded
