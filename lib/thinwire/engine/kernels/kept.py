"""Host buffers a thread keeps between calls: a kernel's slots written on every message
(top-k's candidates, gradient dropping's survivors). Fresh ones would fault in the pages
the kernel writes at every call, which for top-k's scan took as long as the scan itself."""

from __future__ import annotations

import threading

import numpy as np

_kept = threading.local()


def kept(name: str, size: int, dtypes: tuple) -> tuple[np.ndarray, ...]:
    """This thread's arrays ``name``, one of each of ``dtypes``, ``size`` entries each (the
    first ``size`` of arrays kept from an earlier call, or new ones where those are shorter)."""
    arrays = getattr(_kept, name, None)
    if arrays is None or arrays[0].size < size:
        arrays = tuple(np.empty(size, dtype) for dtype in dtypes)
        setattr(_kept, name, arrays)
    return tuple(a[:size] for a in arrays)
