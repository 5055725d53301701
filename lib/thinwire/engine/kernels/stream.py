"""Non-temporal (streaming) stores for large outputs.

A normal store to a line that is not cached first reads the line from memory (a
read-for-ownership), so writing a 100 MB output moves 200 MB; a non-temporal store writes
the whole 64-byte line without reading it. A kernel builds a chunk of its output in a
cache-resident scratch buffer and streams it out (``stream_out``), moving half the bytes.
The output is then not in the cache, a loss when the caller reads it at once: only
outputs of at least ``STREAM_MIN_BYTES`` are streamed (``worth_streaming``). Streamed
stores are weakly ordered, so each chunk ends with a fence.

Whether a computed output (a conversion, a dequantization) gains by being built and
streamed depends on the CPU (``BUILT_STREAMED``): it did on the Intel Xeon measured and not
on the AMD EPYC (Zen 4), where computed outputs are written in place; a constant fill
(``scatter.py``) gains on both. The figures are in the engine's README ("Benchmarks").

Intrinsics (numba exposes neither): ``stream64`` stores 64 bytes with LLVM's
``!nontemporal`` hint at a 64-byte-aligned address (x86 ``vmovntdq``); ``fence`` is a
sequentially consistent fence (``mfence``).
"""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np
from llvmlite import ir
from numba import njit, prange, types
from numba.extending import intrinsic

from . import crc, crc_fold

STREAM_MIN_BYTES = 8 << 20   # smaller outputs may stay cached for their reader: plain stores
LINE = 64


def _vendor() -> str:
    try:
        with open("/proc/cpuinfo") as info:
            return next((line.split(":", 1)[1].strip() for line in info if line.startswith("vendor_id")), "")
    except OSError:
        return ""


BUILT_STREAMED = _vendor() != "AuthenticAMD"  # computed outputs built in the cache and streamed out (see above)


@contextmanager
def streaming(min_bytes: int = 0, built: bool = True):
    """Within the block, outputs of at least ``min_bytes`` are streamed, computed ones too
    where ``built``: how a test takes the streamed paths on small arrays on any CPU (the
    policy is this module's; ``STREAM_MIN_BYTES`` and ``BUILT_STREAMED`` come back after)."""
    global STREAM_MIN_BYTES, BUILT_STREAMED
    before = STREAM_MIN_BYTES, BUILT_STREAMED
    STREAM_MIN_BYTES, BUILT_STREAMED = min_bytes, built
    try:
        yield
    finally:
        STREAM_MIN_BYTES, BUILT_STREAMED = before


def worth_streaming(nbytes: int) -> bool:
    return nbytes >= STREAM_MIN_BYTES


_NO_BYTES = np.empty(0, np.uint8)


def destination(out: np.ndarray, built: bool = False) -> np.ndarray:
    """What a kernel streams ``out`` into: its bytes when it is large enough to stream (and
    contiguous), else an empty array (the kernel then writes ``out`` in place). ``built``:
    the kernel computes each piece in a cached buffer first, streamed only where
    ``BUILT_STREAMED``."""
    if worth_streaming(out.nbytes) and out.flags.c_contiguous and (BUILT_STREAMED or not built):
        return out.reshape(-1).view(np.uint8)
    return _NO_BYTES


def _byte_arrays(*arrays) -> bool:
    return all(isinstance(a, types.Array) and a.dtype == types.uint8 and a.ndim == 1 for a in arrays)


@intrinsic
def stream64(typingctx, dst, dst_at, src, src_at):
    """``dst[dst_at:dst_at + 64] = src[src_at:src_at + 64]`` with a non-temporal store
    (uint8 arrays; ``dst``'s address at ``dst_at`` must be 64-byte aligned; no bounds check)."""
    if not (_byte_arrays(dst, src) and isinstance(dst_at, types.Integer) and isinstance(src_at, types.Integer)):
        return None

    def codegen(context, builder, signature, args):
        line = ir.VectorType(ir.IntType(8), LINE)

        def at(k):
            data = context.make_array(signature.args[k])(context, builder, args[k]).data
            index = context.cast(builder, args[k + 1], signature.args[k + 1], types.intp)
            return builder.bitcast(builder.gep(data, [index]), line.as_pointer())
        value = builder.load(at(2), align=1)
        store = builder.store(value, at(0), align=LINE)
        store.set_metadata("nontemporal", builder.module.add_metadata([ir.Constant(ir.IntType(32), 1)]))
        return context.get_dummy_value()
    return types.void(dst, dst_at, src, src_at), codegen


@intrinsic
def fence(typingctx):
    """Order every store before it (streamed ones included) before any memory access after it."""
    def codegen(context, builder, signature, args):
        builder.fence("seq_cst")
        return context.get_dummy_value()
    return types.void(), codegen


@njit(nogil=True, cache=True)
def stream_out(src, dst, at, address):
    """``dst[at:at + src.size] = src`` (uint8 arrays; ``address``: ``dst``'s address) with
    streamed stores for the 64-byte-aligned lines and plain stores for the bytes before and
    after them; then a fence."""
    stop = at + src.size
    head = min(stop, at + ((-(address + at)) & (LINE - 1)))
    for b in range(at, head):
        dst[b] = src[b - at]
    b = head
    while b + LINE <= stop:
        stream64(dst, b, src, b - at)
        b += LINE
    for j in range(b, stop):
        dst[j] = src[j - at]
    fence()


@njit(nogil=True, cache=True, inline="always")
def stream_lines(dst, at, lines):
    """``dst[at:at + lines.size] = lines`` (uint8 arrays, ``lines.size`` a multiple of 64,
    ``dst``'s address at ``at`` 64-byte aligned) with streamed stores, no fence: a kernel
    that builds its output a few lines at a time in the first-level cache streams each
    block out with this and fences once at the end."""
    for line in range(0, lines.size, LINE):
        stream64(dst, at + line, lines, line)


@njit(nogil=True, cache=True, inline="always")
def aligned_head(address, at, item):
    """How many items of ``item`` bytes from byte ``at`` of an array at ``address`` come
    before its next 64-byte aligned line (the array's address a multiple of ``item``)."""
    return ((-(address + at)) & (LINE - 1)) // item


PIECE = 1 << 18   # bytes per parallel piece of ``copy``, checksummed while it is in the L2 cache


@njit(nogil=True, cache=True)
def copy_folded(src, dst, address):
    """``dst[:] = src`` (uint8 arrays of one size, ``address``: ``dst``'s) streamed, and the
    CRC-32C of those bytes, folded in the copy's own loop (``crc_fold.copy_fold``): each
    line is read once, into registers, for both. The bytes before ``dst``'s first aligned
    line are copied plainly, those after the last whole step streamed by ``stream_out``.
    Needs ``crc.FOLD``."""
    n = src.size
    shift = min(n, aligned_head(address, 0, 1))
    steps = (n - shift) // crc_fold.STEP
    for b in range(shift):
        dst[b] = src[b]
    folded = np.empty(crc_fold.STEP // 8, np.uint64)
    if steps:
        crc_fold.copy_fold(src, 0, dst, shift, steps, folded)
    moved = shift + steps * crc_fold.STEP
    stream_out(src[moved:], dst, moved, address)
    if not steps:
        return crc.crc32c(src)
    return crc.folded_crc(folded, src[steps * crc_fold.STEP:])


@njit(nogil=True, cache=True)
def _checksum_then_copy(src, dst, address):
    """``copy_folded``'s result where the CPU cannot fold: the ``crc32`` streams read the
    bytes first, with their own read-ahead, and the copy streams them from the cache."""
    value = crc.crc32c(src)
    stream_out(src, dst, 0, address)
    return value


# dst[:] = src streamed, returning src's CRC-32C, each line read once (where the CPU folds)
checked_copy = copy_folded if crc.FOLD else _checksum_then_copy


@njit(parallel=True, nogil=True, cache=True)
def _copy(src, dst, address, crcs):
    """Each piece is read from memory once, its CRC folded as it is copied
    (``checked_copy``): nearly the time of the copy alone, where copying and then folding
    each piece from the cache took half as long again (the engine's README)."""
    n = src.size
    for c in prange(-(-n // PIECE)):
        lo, hi = c * PIECE, min(n, (c + 1) * PIECE)
        if crcs.size:
            crcs[c] = checked_copy(src[lo:hi], dst[lo:hi], address + lo)
        else:
            stream_out(src[lo:hi], dst, lo, address)


def copy(src: np.ndarray, dst: np.ndarray, checksum: bool = False) -> int | None:
    """``dst[:] = src`` (contiguous uint8 arrays of one size). A large copy is streamed over
    the kernels' threads and, with ``checksum`` (on CPUs with the CRC instruction), returns
    the CRC-32C of the bytes, computed from each piece while it is cached; otherwise a
    plain copy, and None."""
    if not worth_streaming(src.size):
        np.copyto(dst, src)
        return None
    with_crc = checksum and crc.HARDWARE
    crcs = np.empty(-(-src.size // PIECE) if with_crc else 0, np.uint32)
    _copy(src, dst, dst.ctypes.data, crcs)
    return crc.join(crcs, PIECE, src.size - (crcs.size - 1) * PIECE) if with_crc else None


def warm_up() -> None:
    """Load (or compile) the parallel copy, which only large messages use, before anything
    is timed."""
    src = np.zeros(2 * LINE, np.uint8)
    dst = np.zeros(2 * LINE, np.uint8)
    _copy(src, dst, dst.ctypes.data, np.zeros(1 if crc.HARDWARE else 0, np.uint32))
