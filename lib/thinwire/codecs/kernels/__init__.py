"""Compiled kernels (numba): bit packing, one-read min/max, and the cache they compile into.
``threads`` and ``vector_width`` run first: the thread pool the parallel loops run on (TBB
where installed) and the vector width numba compiles every kernel for."""

from . import threads, vector_width  # noqa: F401
