"""Message checksum: CRC-32C (Castagnoli) of the whole message before the trailer.

CRC-32C detects every burst error of up to 32 bits, so every single flipped byte. The
``crc32c`` package computes it with the CPU's CRC instruction (about 14 GB/s on one core
here, against about 5 GB/s for zlib's CRC-32), and falls back to software elsewhere.

Large buffers are checksummed by torch's intra-op thread count of threads (the package
releases the GIL), each over one contiguous range, and the ranges' CRCs combined:
CRC(A || B) = CRC(A) * x^(8 |B|) + CRC(B) in GF(2)[x] mod the polynomial, with init and
final xor cancelling (the identity behind zlib's ``crc32_combine``; here written with
the x^(2^k) table). ``fill_and_checksum`` copies a message's parts in and checksums it in
the same pass: each thread copies a chunk that fits the cache and checksums it from
there, so the message is read from memory once, not twice. A part whose compiled writer
checksummed it as it wrote it (``kernels/crc.py``) is not read again: its CRC is joined
with those of the bytes around it.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import crc32c
import numpy as np
import torch

from ..kernels import crc as compiled
from ..kernels.crc_math import combine

PARALLEL_MIN = 4 << 20    # bytes below which one thread is faster than handing work out
CHUNK = 1 << 20           # bytes copied and checksummed at a time (in the L2 cache: 1 MB on Zen 4)


_POOL: tuple[int, int, ThreadPoolExecutor] | None = None  # (pid, workers, pool)


def _threads(nbytes: int) -> int:
    """Threads for ``nbytes``: torch's count, and at least 2 MB each."""
    return 1 if nbytes < PARALLEL_MIN else max(1, min(torch.get_num_threads(), nbytes // (PARALLEL_MIN // 2)))


def _map(fn, ranges: list[tuple[int, int]]) -> list[int]:
    """``fn(lo, hi)`` over the ranges on this process's thread pool (a new one after a fork)."""
    global _POOL
    if len(ranges) == 1:
        return [fn(*ranges[0])]
    if _POOL is None or _POOL[0] != os.getpid() or _POOL[1] < len(ranges):
        workers = max(len(ranges), os.cpu_count() or 1)
        _POOL = (os.getpid(), workers, ThreadPoolExecutor(workers, thread_name_prefix="thinwire-crc"))
    return list(_POOL[2].map(lambda r: fn(*r), ranges))


def _ranges(nbytes: int, pieces: int) -> list[tuple[int, int]]:
    cuts = [nbytes * i // pieces for i in range(pieces + 1)]
    return list(zip(cuts[:-1], cuts[1:]))


def _combined(crcs: list[int], ranges: list[tuple[int, int]]) -> int:
    crc = crcs[0]
    for part, (lo, hi) in zip(crcs[1:], ranges[1:]):
        crc = combine(crc, part, hi - lo)
    return crc


def checksum(buffer: memoryview) -> int:
    """The 32-bit checksum of ``buffer`` (a byte memoryview); a large one over the compiled
    kernels' threads where the CPU has the CRC instruction (``kernels/crc.py``)."""
    if compiled.HARDWARE and len(buffer) >= PARALLEL_MIN:
        return compiled.checksum(np.frombuffer(buffer, dtype=np.uint8))
    ranges = _ranges(len(buffer), _threads(len(buffer)))
    return _combined(_map(lambda lo, hi: crc32c.crc32c(buffer[lo:hi]), ranges), ranges)


def fill_and_checksum(message: bytearray, end: int, copies: list[tuple[int, np.ndarray]],
                      known: list[tuple[int, int, int]] = ()) -> int:
    """Copy each (offset, uint8 array) into ``message`` and return the CRC-32C of
    ``message[:end]`` (the rest of which is written already), chunk by chunk. ``known``:
    (offset, length, CRC-32C) of pieces already written whose checksum their writer
    computed; where no part is copied in, only the bytes around them are read (with
    copies, the whole message is checksummed as it is filled)."""
    if known and not copies:
        return _around(message, end, sorted(known))
    if not copies:  # the parts wrote themselves (``PartWriter``): one checksum per thread
        return checksum(memoryview(message)[:end])
    dst = np.frombuffer(message, dtype=np.uint8, count=end)

    def fill(lo: int, hi: int) -> int:
        crc = 0
        for start in range(lo, hi, CHUNK):
            stop = min(start + CHUNK, hi)
            for offset, src in copies:
                a, b = max(start, offset), min(stop, offset + src.size)
                if a < b:
                    dst[a:b] = src[a - offset:b - offset]
            crc = crc32c.crc32c(memoryview(dst[start:stop]), crc)
        return crc

    ranges = _ranges(end, _threads(end))
    return _combined(_map(fill, ranges), ranges)


def _around(message: bytearray, end: int, known: list[tuple[int, int, int]]) -> int:
    """The CRC-32C of ``message[:end]``, joining the known pieces' checksums with those of
    the bytes between them."""
    view, crc, at = memoryview(message), None, 0
    for off, length, part in known + [(end, 0, 0)]:
        for lo, hi, value in ((at, off, None), (off, off + length, part)):
            if hi > lo:
                value = checksum(view[lo:hi]) if value is None else value
                crc = value if crc is None else combine(crc, value, hi - lo)
        at = off + length
    return 0 if crc is None else crc


def warm_up() -> None:
    """Load the compiled checksum that large messages use, before anything is timed."""
    if compiled.HARDWARE:
        compiled.warm_up()
