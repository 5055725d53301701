"""Compiled kernels (numba): bit packing, one-read min/max, and the cache they compile into.
``vector_width`` runs first: it chooses the vector width numba compiles every kernel for."""

from . import vector_width  # noqa: F401
