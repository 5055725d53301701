"""Compiled kernels (numba): bit packing, one-read min/max, and the cache they compile into."""
