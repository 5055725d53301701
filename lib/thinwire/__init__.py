"""thinwire: a reproducibility workbench for communication-efficient distributed deep learning.

Layers (imports only point left): codecs <- comm <- algorithms <- experiment <- notebooks.
"""

import os as _os
import sys as _sys

__version__ = "0.1.0"

# The compiled kernels' pool holds twice the cores, for the larger team they run on while
# other processes keep the cores busy (``engine/kernels/team.py``). numba reads the pool's
# size once, when it is imported: a setting in the environment, or an earlier import of
# numba, keeps its own.
if "NUMBA_NUM_THREADS" not in _os.environ and "numba" not in _sys.modules:
    try:
        _cores = len(_os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        _cores = _os.cpu_count() or 1
    _os.environ["NUMBA_NUM_THREADS"] = str(2 * _cores)
