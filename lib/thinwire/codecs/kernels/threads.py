"""Which thread pool runs the compiled kernels' parallel loops: Intel TBB's where the ``tbb``
package is installed (``requirements.lock`` installs it), numba's OpenMP otherwise.

Why: on a shared machine a thread of a parallel loop can lose its core for a time slice.
Under OpenMP each thread owns a fixed share of the iterations, so the loop ends a slice
late and the thread that finished first spins at the barrier, burning the core its partner
needs. TBB's threads steal each other's unstarted chunks, so the one left running does the
work. Every parallel loop here writes per-chunk outputs (no shared reduction), so which
thread runs a chunk changes no result. Measured with ``benchmarks/load_bench.py`` (two
matmul processes left running on 2 cores): README, benchmarks.

numba finds TBB's library only on the loader's search path, which a virtual environment's
``lib`` folder is not on; ``preload`` loads it from the installed package first, so numba's
default layer order (TBB, then OpenMP) takes it. ``NUMBA_THREADING_LAYER`` still decides
where it is set.
"""

from __future__ import annotations

import ctypes
import importlib.metadata

LIBRARY = "libtbb.so.12"  # the soname numba's TBB pool links against


def preload() -> bool:
    """Load the ``tbb`` package's library globally; False where it is not installed (or not
    loadable on this system), leaving numba to its next layer."""
    try:
        files = importlib.metadata.distribution("tbb").files or ()
    except importlib.metadata.PackageNotFoundError:
        return False
    for f in files:
        if f.name == LIBRARY:
            try:
                ctypes.CDLL(str(f.locate()), mode=ctypes.RTLD_GLOBAL)
                return True
            except OSError:
                return False
    return False


LOADED = preload()
