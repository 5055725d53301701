"""New message buffers, backed by transparent huge pages where Linux offers them (as
numpy's large arrays are).

A message is a ``bytearray``. A large one, allocated the usual way (``bytearray(n)``), is
mapped fresh and zeroed at once, so it is made of 4 KiB pages, and every pass over it
walks about 25,000 page translations per 100 MB. ``message_buffer`` asks for the memory
without touching it (``PyByteArray_Resize`` on an empty ``bytearray``), advises huge
pages for it (``madvise(MADV_HUGEPAGE)``, which the kernel honours under its ``always``
and ``madvise`` settings), and only then zeroes it, so its pages are made 2 MiB at a
time. Anywhere that fails (not Linux, not CPython), it is ``bytearray(n)``: the same
zeroed bytes, on smaller pages. Passes over such a buffer (a checksum, a copy in or out)
and whole round trips into a reused message are faster, and making it usually costs less
than ``bytearray(n)``, though a process's first huge pages may wait for the kernel to
compact memory.
"""

from __future__ import annotations

import ctypes
import sys

HUGE_PAGE = 1 << 21
MIN_BYTES = 8 << 20        # smaller messages: the usual allocation
MADV_HUGEPAGE = 14


def _functions():
    if not sys.platform.startswith("linux") or sys.implementation.name != "cpython":
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        madvise = libc.madvise
        madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        resize = ctypes.pythonapi.PyByteArray_Resize
        resize.argtypes = [ctypes.py_object, ctypes.c_ssize_t]
        resize.restype = ctypes.c_int
        as_string = ctypes.pythonapi.PyByteArray_AsString
        as_string.argtypes = [ctypes.py_object]
        as_string.restype = ctypes.c_void_p
        return madvise, resize, as_string
    except (OSError, AttributeError):
        return None


_FUNCTIONS = _functions()


def message_buffer(nbytes: int, functions=_FUNCTIONS) -> bytearray:
    """A zeroed ``bytearray`` of ``nbytes``; one of at least ``MIN_BYTES`` on huge pages
    where the system allows (``functions``: the C functions that takes, None for a plain
    ``bytearray``)."""
    if nbytes < MIN_BYTES or functions is None:
        return bytearray(nbytes)
    madvise, resize, as_string = functions
    buffer = bytearray()
    if resize(buffer, nbytes) != 0:
        return bytearray(nbytes)
    address = as_string(buffer)
    first = -(-address // HUGE_PAGE) * HUGE_PAGE
    last = (address + nbytes) // HUGE_PAGE * HUGE_PAGE
    if last > first:
        madvise(first, last - first, MADV_HUGEPAGE)  # advice only: refused, the pages stay small
    ctypes.memset(address, 0, nbytes)
    return buffer
