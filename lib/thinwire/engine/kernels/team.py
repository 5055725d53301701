"""How many threads the compiled kernels' parallel loops run on: one per core while the
machine is idle, twice as many while other processes keep its cores busy.

numba runs a ``prange`` loop on the calling thread's team, and each loop ends at a barrier.
On a shared machine the scheduler gives each runnable thread one share of a core, so a
team of one thread per core gets a fraction of the cores and waits at every barrier for a
thread that lost its core; twice the threads double the share (``load_bench.py`` measures
it, the engine's README has the table). So the team doubles only while the runnable
threads of other processes (``/proc/loadavg``, read at most every ``RECHECK`` seconds) at
least match the cores; ``THINWIRE_KERNEL_THREADS`` fixes it instead of ``auto``.

``thinwire`` raises ``NUMBA_NUM_THREADS`` to twice the cores when imported before numba.
Chunks are fixed by the data, never by the team, so every message is the same whatever its
size. ``fit`` sizes the calling thread's team (a tensor below ``SMALL`` bytes gets one
thread); ``alone_if_small`` runs a step over a message's few entries on the calling thread.
"""

from __future__ import annotations

import contextlib
import os
import time

import numba

SETTING = "THINWIRE_KERNEL_THREADS"
RECHECK = 0.1  # seconds a reading of the machine's load is kept
SMALL = 1 << 20  # bytes of work below which a kernel runs on the calling thread alone (``alone_if_small``)
# Bytes below which a step over a message's entries (gradient dropping's gather of its survivors,
# its read of the sampled positions, a cache line each) runs on the calling thread alone. Measured
# on 25M values at 1% (a 3 MB gather, 25,000 sampled reads), with two loads of two threads left
# running (5 runs of 5 rounds each way, ``load_bench.run_continuous``): graddrop(0.99)'s slowdown
# 2.75 -> 2.22 and graddrop(0.99, bits=1)'s 2.83 -> 2.41 (means of the runs' medians); alone,
# 11.7 -> 12.3 ms and 19.1 -> 19.3 ms.
STEP = 1 << 23


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


CORES = _cores()  # the CPUs this process may run on, as numba counts them


def _start_pool() -> None:
    """Start numba's thread pool now and give torch back its thread count. numba's OpenMP
    layer, starting its pool, sets the process's OpenMP threads to the pool's size (twice
    the cores), and torch computes on that same OpenMP runtime: after the first parallel
    kernel torch ran twice as many threads as cores, about half as fast on a small model."""
    import torch
    before = torch.get_num_threads()
    numba.get_num_threads()  # starts the pool
    if torch.get_num_threads() != before:
        torch.set_num_threads(before)


_start_pool()


def setting() -> int | None:
    """``THINWIRE_KERNEL_THREADS`` as a team size, or None for ``auto`` (the default)."""
    raw = os.environ.get(SETTING, "auto")
    if raw == "auto":
        return None
    if raw.strip().isdigit() and int(raw) >= 1:
        return int(raw)
    raise ValueError(f"{SETTING}={raw!r} is not allowed: it must be 'auto' or a whole number of threads >= 1")


def _own_running() -> int:
    """This process's threads that are running or runnable now."""
    count = 0
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                stat = f.read()
        except OSError:  # the thread ended
            continue
        count += stat[stat.rindex(")") + 2] == "R"
    return count


def others_running() -> int:
    """Threads of other processes running or runnable now (0 where /proc cannot tell)."""
    try:
        with open("/proc/loadavg") as f:
            running = int(f.read().split()[3].split("/")[0])
        return max(0, running - _own_running())
    except (OSError, ValueError, IndexError):
        return 0


_seen = {"at": -RECHECK, "busy": False}


def busy() -> bool:
    """Whether other processes' runnable threads at least match the cores (read at most
    every ``RECHECK`` seconds)."""
    now = time.monotonic()
    if now - _seen["at"] >= RECHECK:
        _seen["at"], _seen["busy"] = now, others_running() >= CORES
    return _seen["busy"]


def size() -> int:
    """The team for the next kernels: the setting, else the cores, doubled while busy;
    never more than the pool."""
    fixed = setting()
    wanted = fixed if fixed is not None else CORES * (2 if busy() else 1)
    return max(1, min(wanted, numba.config.NUMBA_NUM_THREADS))


def fit(nbytes: int | None = None) -> int:
    """Size the calling thread's team for the kernels it runs next, on a tensor of ``nbytes``
    (one thread below ``SMALL``); returns the size."""
    n = 1 if nbytes is not None and nbytes < SMALL else size()
    if numba.get_num_threads() != n:
        numba.set_num_threads(n)
    return n


@contextlib.contextmanager
def alone_if_small(nbytes: int, limit: int = SMALL):
    """The kernels inside run on the calling thread alone when they read fewer than ``limit``
    bytes (a step over a message's k survivors, not over the tensor): a team's start and
    barrier cost little on an idle machine and about a time slice on a busy one, more than
    such a step's work. The team is restored after."""
    if nbytes >= limit:
        yield
        return
    before = numba.get_num_threads()
    if before == 1:
        yield
        return
    numba.set_num_threads(1)
    try:
        yield
    finally:
        numba.set_num_threads(before)
