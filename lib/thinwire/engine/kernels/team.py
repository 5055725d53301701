"""How many threads the compiled kernels' parallel loops run on: one per core while the
machine is idle, twice as many while other processes keep its cores busy.

numba runs a ``prange`` loop on the calling thread's team size (``numba.set_num_threads``,
at most the pool of ``NUMBA_NUM_THREADS`` threads). Each loop splits its chunks evenly
among the team and ends at a barrier. On an idle machine one thread per core is the
fastest team. On a shared one the scheduler divides each core among the runnable threads,
one share per thread: with two other processes of two threads each on two cores, each of
a codec's two threads gets about a third of a core, so a codec whose loops keep both cores
busy alone runs about 3x slower, and more, since every loop waits at its barrier for a
thread that lost its core. With twice as many threads the codec's share of the cores
doubles, and a thread that finished its part no longer leaves the rest of the loop to one
that waits for its turn.

Measured on the 2-core AMD EPYC with ``load_bench.py`` (its two loads of two threads, the
median slowdown of 3 rounds), over the twelve codecs slowest under load: with a team of 2,
9 of them were above 3x with the loads paused between pairs and 4 with the loads left
running (the largest 3.41x and 3.51x); with the team sized as here, 1 and 1
(graddrop(0.99, bits=1), 3.15x and 3.44x: its round trip then opened 11 parallel regions,
some of them torch operations on the survivors, which now run in numpy). Alone, in
one process switching between them (7 rounds, 11 codecs), teams of 4 took 0.96-1.07x the
time of teams of 2. So the
team doubles only while the machine is busy: while the threads of other processes that
are running (``/proc/loadavg``'s count of runnable threads, less this process's own) at
least match the cores. That count is read at most every ``RECHECK`` seconds. The larger
team takes a larger share of the cores from the other processes, as any process with more
threads does: ``THINWIRE_KERNEL_THREADS`` fixes the team (``1``, ``2``, ...) instead of
``auto``.

The pool must hold the larger team: ``thinwire`` raises ``NUMBA_NUM_THREADS`` to twice the
cores when it is imported before numba, unless the environment sets it; the team never
exceeds the pool. Chunks are fixed by the data, never by the team, so every message is the
same whatever the team's size. ``fit`` sizes the calling thread's team; the codecs call it
as they encode and decode (a tensor below ``SMALL`` bytes gets one thread), and a kernel
called in a thread that never did runs on the whole pool. ``alone_if_small`` runs a step
over a message's few entries (a sparsifier's k values, their bits) on the calling thread.
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
