"""float32 to and from the 16-bit floats of the dense codecs (IEEE half: ``fp16``;
bfloat16: ``bf16``) in compiled kernels, for host tensors.

Each parallel piece is converted and checksummed while it is in the cache (``crc.crc32c``
on the way into a message), and a large output's pieces are built in a cached buffer and
streamed out (``stream.stream_out``): the message is not read again to checksum it, and no
output line is read before it is written. Where ``folded`` (AMD's CPUs with VPCLMULQDQ and
AVX-512), the CRC is folded in the loop that converts (``half_fold``), and large outputs
are stored streamed from that loop. torch's conversions are one OpenMP pass each, and the
checksum another.

- half: LLVM's ``fptrunc`` / ``fpext`` between ``float`` and ``half`` (x86 F16C
  ``vcvtps2ph`` / ``vcvtph2ps``; ``HARDWARE``: without F16C the codec casts with torch):
  round to nearest even, overflow to infinity, subnormals kept. Checked against torch on
  all 2^32 float32 bit patterns and all 2^16 half ones: the same bits.
- bfloat16: the upper 16 bits rounded to nearest even; every NaN becomes the quiet NaN
  0x7FC0 (c10's ``round_to_nearest_even``). torch's own vectorized conversion writes
  0xFFFF for a NaN and its scalar one 0x7FC0, so torch's bytes for NaN depend on where it
  sits; every other input gives torch's bits. Widening is exact (the bits shifted up).
"""

from __future__ import annotations

import functools

import numba
import numpy as np
from llvmlite import ir
from numba import njit, prange, types
from numba.extending import intrinsic

from . import crc, crc_fold, half_fold, stream
from .jit_cache import closure_kernel, keyed
from .vector_width import target_features

HARDWARE = "+f16c" in (target_features() or ())   # half conversions in hardware (x86 F16C)
PIECE = 1 << 16   # values per parallel piece (128 KiB of 16-bit values, 256 KiB of float32)


@intrinsic
def _half_bits(typingctx, value):
    """The IEEE half nearest a float32 (ties to even), as its uint16 bits."""
    if value != types.float32:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(builder.fptrunc(args[0], ir.HalfType()), ir.IntType(16))
    return types.uint16(types.float32), codegen


@intrinsic
def _half_value(typingctx, bits):
    """The float32 value of IEEE half bits (exact)."""
    if bits != types.uint16:
        return None

    def codegen(context, builder, signature, args):
        return builder.fpext(builder.bitcast(args[0], ir.HalfType()), ir.FloatType())
    return types.float32(types.uint16), codegen


@njit(nogil=True, cache=True)
def _to_half(x, bits, out):
    for i in range(out.size):
        out[i] = _half_bits(x[i])


@njit(nogil=True, cache=True)
def _to_bfloat(x, bits, out):
    for i in range(out.size):
        u = bits[i]
        rounded = (u + np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)
        out[i] = np.uint16(np.uint32(0x7FC0) if (u & np.uint32(0x7FFFFFFF)) > np.uint32(0x7F800000) else rounded)


@njit(nogil=True, cache=True)
def _from_half(h, out, bits):
    for i in range(h.size):
        out[i] = _half_value(h[i])


@njit(nogil=True, cache=True)
def _from_bfloat(h, out, bits):
    for i in range(h.size):
        bits[i] = np.uint32(h[i]) << np.uint32(16)


@functools.lru_cache(maxsize=None)
@keyed
def _fold_kernels(bf16: bool):
    """(widen folded one range, in parallel; narrow streamed one range, in parallel; widen
    streamed one range, in parallel) for one 16-bit format where ``folded(bf16)``: each
    piece's CRC-32C folded in the loop that converts it (``half_fold``)."""
    narrow_piece = _to_bfloat if bf16 else _to_half
    widen_piece = _from_bfloat if bf16 else _from_half
    widen_fold = half_fold.widen_fold[bf16]
    narrow_fold_streamed = half_fold.narrow_fold_streamed[bf16]
    widen_fold_streamed = half_fold.widen_fold_streamed[bf16]

    @closure_kernel(nogil=True)
    def widen_folded(h, out):
        """``out`` = the values of the 16-bit floats ``h`` (one piece), written in place ->
        the CRC-32C of ``h``, folded as it is read (``half_fold.widen_fold``)."""
        steps = h.size // half_fold.STEP_VALUES
        done = steps * half_fold.STEP_VALUES
        folded = np.empty(crc_fold.STEP // 8, np.uint64)
        if steps:
            widen_fold(out, h, steps, folded)
        widen_piece(h[done:], out[done:], out[done:].view(np.uint32))
        return crc.folded_crc(folded, h[done:].view(np.uint8)) if steps else crc.crc32c(h.view(np.uint8))

    @closure_kernel(nogil=True)
    def widen_folded_range(h, out, raw, address, lo, hi, scratch, checked):
        """``widen_range`` where ``folded`` (``raw``, ``scratch``, ``checked``: unused)."""
        return widen_folded(h[lo:hi], out[lo:hi])

    @closure_kernel(parallel=True, nogil=True)
    def widen_folded_all(h, out, raw, address, crcs, scratch, checked):
        n = h.size
        for c in prange(-(-n // PIECE)):
            crcs[c] = widen_folded_range(h, out, raw, address, c * PIECE, min(n, (c + 1) * PIECE), scratch, checked)

    @closure_kernel(nogil=True)
    def narrow_streamed(x, out, address):
        """``out`` = the 16-bit floats of ``x`` (one piece; ``address``: ``out``'s) with
        streamed stores, their CRC-32C folded in the same loop
        (``half_fold.narrow_fold_streamed``): the values before ``out``'s first aligned line
        and after the last whole step are narrowed with plain stores -> the CRC-32C of
        ``out``'s bytes."""
        n = x.size
        head = min(n, stream.aligned_head(address, 0, 2))
        steps = (n - head) // half_fold.STEP_VALUES if address % 2 == 0 else 0
        if steps == 0:
            narrow_piece(x, x.view(np.uint32), out)
            return crc.crc32c(out.view(np.uint8))
        narrow_piece(x[:head], x[:head].view(np.uint32), out[:head])
        folded = np.empty(crc_fold.STEP // 8, np.uint64)
        narrow_fold_streamed(x, out, head, steps, folded)
        done = head + steps * half_fold.STEP_VALUES
        narrow_piece(x[done:], x[done:].view(np.uint32), out[done:])
        stream.fence()
        return crc.folded_crc(folded, out[steps * half_fold.STEP_VALUES:].view(np.uint8))

    @closure_kernel(nogil=True)
    def narrow_streamed_range(x, bits, out, raw, address, lo, hi, scratch):
        """``narrow_range`` where ``folded`` and the output is large (``raw``, ``scratch``:
        unused)."""
        return narrow_streamed(x[lo:hi], out[lo:hi], address + 2 * lo)

    @closure_kernel(parallel=True, nogil=True)
    def narrow_streamed_all(x, bits, out, raw, address, crcs, scratch):
        n = x.size
        for c in prange(-(-n // PIECE)):
            crcs[c] = narrow_streamed_range(x, bits, out, raw, address, c * PIECE, min(n, (c + 1) * PIECE), scratch)

    @closure_kernel(nogil=True)
    def widen_streamed(h, out, address):
        """``widen_folded`` with streamed stores (``half_fold.widen_fold_streamed``) for the
        values from ``out``'s first aligned line to the last whole step -> the CRC-32C of
        ``h``."""
        n = h.size
        head = min(n, stream.aligned_head(address, 0, 4))
        steps = (n - head) // half_fold.STEP_VALUES if address % 4 == 0 else 0
        if steps == 0:
            return widen_folded(h, out)
        widen_piece(h[:head], out[:head], out[:head].view(np.uint32))
        folded = np.empty(crc_fold.STEP // 8, np.uint64)
        widen_fold_streamed(out, h, head, steps, folded)
        done = head + steps * half_fold.STEP_VALUES
        widen_piece(h[done:], out[done:], out[done:].view(np.uint32))
        stream.fence()
        return crc.folded_crc(folded, h[steps * half_fold.STEP_VALUES:].view(np.uint8))

    @closure_kernel(nogil=True)
    def widen_streamed_range(h, out, raw, address, lo, hi, scratch, checked):
        """``widen_range`` where ``folded`` and the output is large."""
        return widen_streamed(h[lo:hi], out[lo:hi], address + 4 * lo)

    @closure_kernel(parallel=True, nogil=True)
    def widen_streamed_all(h, out, raw, address, crcs, scratch, checked):
        n = h.size
        for c in prange(-(-n // PIECE)):
            crcs[c] = widen_streamed_range(h, out, raw, address, c * PIECE, min(n, (c + 1) * PIECE), scratch, checked)

    return (widen_folded_range, widen_folded_all, narrow_streamed_range, narrow_streamed_all,
            widen_streamed_range, widen_streamed_all)


@functools.lru_cache(maxsize=None)
@keyed
def _kernels(bf16: bool):
    """(narrow one range, narrow in parallel, widen one range, widen in parallel) for one
    16-bit format. Each format gets its own kernels, so the half conversions are compiled
    only where they are used (``HARDWARE``)."""
    narrow_piece = _to_bfloat if bf16 else _to_half
    widen_piece = _from_bfloat if bf16 else _from_half

    @closure_kernel(nogil=True)
    def narrow_range(x, bits, out, raw, address, lo, hi, scratch):
        """Values ``lo .. hi`` into ``out`` (``raw``: out's bytes when streamed, else empty;
        then built in ``scratch`` first) -> the CRC-32C of their 16-bit floats (0 without
        the CRC instruction)."""
        piece = out[lo:hi] if raw.size == 0 else scratch[:hi - lo]
        narrow_piece(x[lo:hi], bits[lo:hi], piece)
        value = crc.crc32c(piece.view(np.uint8)) if crc.HARDWARE else np.uint32(0)
        if raw.size:
            stream.stream_out(piece.view(np.uint8), raw, 2 * lo, address)
        return value

    @closure_kernel(parallel=True, nogil=True)
    def narrow_all(x, bits, out, raw, address, crcs, scratch):
        n = x.size
        for c in prange(-(-n // PIECE)):
            crcs[c] = narrow_range(x, bits, out, raw, address, c * PIECE, min(n, (c + 1) * PIECE),
                                   scratch[numba.get_thread_id()])

    @closure_kernel(nogil=True)
    def widen_range(h, out, raw, address, lo, hi, scratch, checked):
        """Values ``lo .. hi`` of ``h`` widened into ``out`` -> with ``checked``, the CRC-32C
        of their 16-bit floats, taken before they are widened, while they are cached."""
        value = crc.crc32c(h[lo:hi].view(np.uint8)) if checked else np.uint32(0)
        piece = out[lo:hi] if raw.size == 0 else scratch[:hi - lo]
        widen_piece(h[lo:hi], piece, piece.view(np.uint32))
        if raw.size:
            stream.stream_out(piece.view(np.uint8), raw, 4 * lo, address)
        return value

    @closure_kernel(parallel=True, nogil=True)
    def widen_all(h, out, raw, address, crcs, scratch, checked):
        n = h.size
        for c in prange(-(-n // PIECE)):
            crcs[c] = widen_range(h, out, raw, address, c * PIECE, min(n, (c + 1) * PIECE),
                                  scratch[numba.get_thread_id()], checked)

    return narrow_range, narrow_all, widen_range, widen_all


def _scratch(dtype, threads: int | None = None) -> np.ndarray:
    """One cached piece per thread (indexed by ``numba.get_thread_id()``): allocated once
    per call, not once per piece (a piece of 128 KiB or more is a fresh ``mmap``, page
    faults included, on every allocation)."""
    return np.empty((threads or numba.config.NUMBA_NUM_THREADS, PIECE), dtype)


def folded(bf16: bool) -> bool:
    """Whether this format's conversions fold the CRC-32C in the loop that converts
    (``_fold_kernels``): where the CPU folds (``crc.FOLD``) and writes computed outputs in
    place (``stream.BUILT_STREAMED`` off: AMD's), for half where it converts in hardware."""
    return crc.FOLD and not stream.BUILT_STREAMED and (bf16 or HARDWARE)


def _streamed(out: np.ndarray, bf16: bool) -> bool:
    """Whether a conversion stores ``out`` streamed with its CRC folded in the same loop
    (``_fold_kernels``' streamed ones): where ``folded``, for large outputs, where both
    directions were faster than folding from the cache or with plain stores (the engine's
    README)."""
    return folded(bf16) and stream.worth_streaming(out.nbytes)


def supported(bf16: bool) -> bool:
    """Whether the kernels convert to this format here (half needs ``HARDWARE``)."""
    return bf16 or HARDWARE


def narrow(x: np.ndarray, out: np.ndarray, bf16: bool) -> int | None:
    """``out`` (uint16, contiguous) = the half (or bfloat16) bits of the float32 array
    ``x``; returns the CRC-32C of ``out``'s bytes where the CPU has the CRC instruction,
    else None. One piece runs on the calling thread."""
    narrow_range, narrow_all = _fold_kernels(bf16)[2:4] if _streamed(out, bf16) else _kernels(bf16)[:2]
    pieces = -(-x.size // PIECE)
    bits, raw = x.view(np.uint32), stream.destination(out, built=True)
    if pieces <= 1:
        value = narrow_range(x, bits, out, raw, out.ctypes.data, 0, x.size, _scratch(np.uint16, 1)[0])
        return int(value) if crc.HARDWARE else None
    crcs = np.empty(pieces, np.uint32)
    narrow_all(x, bits, out, raw, out.ctypes.data, crcs, _scratch(np.uint16))
    return crc.join(crcs, 2 * PIECE, 2 * x.size - 2 * (pieces - 1) * PIECE) if crc.HARDWARE else None


def widen(h: np.ndarray, out: np.ndarray, bf16: bool, checksum: bool = False) -> int | None:
    """``out`` (float32, contiguous) = the values of the half (or bfloat16) bits ``h``;
    with ``checksum`` (where the CPU has the CRC instruction) returns the CRC-32C of ``h``'s
    bytes, each piece's taken as it is widened (a message verified in the same pass:
    ``wire.read_host_part``), else None."""
    fold = checksum and folded(bf16)   # a checked message: read once, widened as it is folded
    widen_range, widen_all = ((_fold_kernels(bf16)[4:] if _streamed(out, bf16) else _fold_kernels(bf16)[:2])
                              if fold else _kernels(bf16)[2:])
    checked = checksum and crc.HARDWARE
    pieces = -(-h.size // PIECE)
    raw = stream.destination(out, built=True)
    if pieces <= 1:
        value = widen_range(h, out, raw, out.ctypes.data, 0, h.size, _scratch(np.float32, 1)[0], checked)
        return int(value) if checked else None
    crcs = np.empty(pieces, np.uint32)
    widen_all(h, out, raw, out.ctypes.data, crcs, _scratch(np.float32), checked)
    return crc.join(crcs, 2 * PIECE, 2 * h.size - 2 * (pieces - 1) * PIECE) if checked else None


def warm_up(bf16: bool) -> None:
    """Load (or compile) this format's kernels, the parallel ones too (which only tensors of
    more than one piece use), before anything is timed."""
    x, h = np.zeros(2 * PIECE, np.float32), np.zeros(2 * PIECE, np.uint16)
    narrow(x[:1], h[:1], bf16)
    narrow(x, h, bf16)
    for checksum in (False, True):
        widen(h[:1], x[:1], bf16, checksum)
        widen(h, x, bf16, checksum)
    if folded(bf16):   # the streamed kernels, which only large outputs use
        _, _, narrow_range, narrow_all, widen_range, widen_all = _fold_kernels(bf16)
        crcs, no = np.empty(2, np.uint32), np.empty(0, np.uint8)
        narrow_all(x, x.view(np.uint32), h, no, h.ctypes.data, crcs, _scratch(np.uint16))
        narrow_range(x, x.view(np.uint32), h, no, h.ctypes.data, 0, x.size, _scratch(np.uint16, 1)[0])
        widen_all(h, x, no, x.ctypes.data, crcs, _scratch(np.float32), True)
        widen_range(h, x, no, x.ctypes.data, 0, h.size, _scratch(np.float32, 1)[0], True)
