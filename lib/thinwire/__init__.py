"""thinwire: a reproducibility workbench for communication-efficient distributed deep learning.

Layers (imports only point left): codecs <- comm <- algorithms <- experiment <- notebooks.
"""

import os

# OpenMP threads that wait at the end of a parallel region sleep instead of spinning: on a
# shared machine a spinning thread burns the time slice its descheduled partner needs.
# Measured (benchmarks/load_bench.py, two matmul processes left running on 2 cores):
# gradient dropping 3.9x -> 2.6x slower than alone, with 1-bit values 5.8x -> 3.2x; a
# small model's training step alone about 7% slower. OpenMP reads this when torch loads,
# so it takes effect when thinwire is imported first (the CLI, notebooks, ``make``);
# OMP_WAIT_POLICY=ACTIVE in the environment keeps spinning on a dedicated machine.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

__version__ = "0.1.0"
