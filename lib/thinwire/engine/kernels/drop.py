"""Alg. 1 of Aji & Heafield (2017) as one compiled pass per chunk (``drop_pass.py``):

    corrected = residual + gradient      (written into the residual's buffer, or a second one)
    survivor  = not |corrected| <= t     (NaN and Inf always survive)
    survivors' (index, value) recorded, and their residual zeroed

Chunks run in parallel, testing blocks of 64 values at once, each writing its survivors
into its own slots of a shared output (``capacity`` per chunk, about 4x the expected
count). A chunk that finds more stops at the first survivor that does not fit and says
where; ``rest`` finishes its remainder, so the tensor is read and written once, whatever
the threshold. Keeping ties (``|x| >= t``) is the same test against the float32 just below
t. ``gather`` moves the survivors out of the slots and counts NaN and Inf on the way (a
message holding one is refused, with no other pass). A large corrected tensor in a buffer
of its own is written a 256-byte block at a time with streamed stores
(``_add_and_drop_streamed``), so its lines are never read; the engine's README has the
timings.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from . import stream
from .bits import trailing_zeros


BLOCK = 64  # values tested together: one bit each in a survivor mask
EXPONENT = np.uint32(0x7F800000)  # a float32 whose exponent bits are all set is NaN or Inf


@njit(nogil=True, cache=True, inline="always")
def _record(res, t, keep, first, lo, hi, index, values, j, found, capacity):
    """Record the survivors of res[lo:hi]: (found, position of the first that did not fit or -1)."""
    for i in range(lo, hi):
        x = res[i]
        if not abs(x) <= t:
            if found == capacity:
                return found, i
            index[j + found], values[j + found] = first + i, x
            found += 1
            if keep:
                res[i] = 0.0
    return found, -1


@njit(nogil=True, cache=True)
def _add_and_drop_piece(src, grad, out, t, first, index, values, j, found, capacity):
    """Alg. 1 on one piece, written to ``out``. Each block of ``BLOCK`` values is corrected
    and tested in one loop of fixed trip count (it vectorizes: an add pass with a compare
    beside it), which leaves one bit per survivor in a 64-bit mask; the survivors are then
    visited by their bits alone (``trailing_zeros``), so a block costs its survivors, not
    its length. Out of slots: the piece's rest is corrected, not dropped, and the position
    of the survivor that did not fit is returned (else -1)."""
    n = out.size
    full = n - n % BLOCK
    for base in range(0, full, BLOCK):
        mask = np.uint64(0)
        for k in range(BLOCK):
            x = src[base + k] + grad[base + k]
            out[base + k] = x
            mask |= np.uint64(not abs(x) <= t) << np.uint64(k)
        while mask:
            i = base + trailing_zeros(mask)
            mask &= mask - np.uint64(1)
            if found == capacity:
                for r in range(base + BLOCK, n):
                    out[r] = src[r] + grad[r]
                return found, i
            index[j + found], values[j + found] = first + i, out[i]
            found += 1
            out[i] = 0.0
    for i in range(full, n):
        out[i] = src[i] + grad[i]
    return _record(out, t, True, first, full, n, index, values, j, found, capacity)


@njit(nogil=True, cache=True)
def _add_and_drop_streamed(src, grad, t, first, index, values, j, capacity, raw, address):
    """``_add_and_drop_piece`` on one chunk of a large corrected tensor (at ``first`` of the
    tensor whose bytes are ``raw``, at ``address``), streamed: each aligned block of
    ``BLOCK`` values is corrected into a 256-byte buffer that stays in the first-level
    cache, its survivors recorded and zeroed there, and the buffer's 4 lines streamed out
    (``stream.stream_lines``), so no line of the output is read before it is written. The
    values before the first aligned block and after the last are written in place."""
    n = src.size
    block = np.empty(BLOCK, np.float32)
    lines = block.view(np.uint8)
    head = min(n, stream.aligned_head(address, 4 * first, 4))
    found, stop = _correct_and_record(src, grad, raw, first, 0, head, t, index, values, j, 0, capacity)
    if stop >= 0:
        _correct(src, grad, raw, first, head, n)
        return found, stop
    full = head + (n - head) // BLOCK * BLOCK
    aligned_src, aligned_grad = src[head:], grad[head:]  # indices from 0: no negative-index checks in the loop
    for base in range(0, full - head, BLOCK):
        mask = np.uint64(0)
        for k in range(BLOCK):
            x = aligned_src[base + k] + aligned_grad[base + k]
            block[k] = x
            mask |= np.uint64(not abs(x) <= t) << np.uint64(k)
        while mask:
            i = np.int64(trailing_zeros(mask))
            mask &= mask - np.uint64(1)
            if found == capacity:  # out of slots: the block's rest and the chunk's rest corrected, not dropped
                stop = head + base + i
                break
            index[j + found], values[j + found] = first + head + base + i, block[i]
            found += 1
            block[i] = 0.0
        stream.stream_lines(raw, 4 * (first + head + base), lines)
        if stop >= 0:
            _correct(src, grad, raw, first, head + base + BLOCK, n)
            stream.fence()
            return found, stop
    stream.fence()
    return _correct_and_record(src, grad, raw, first, full, n, t, index, values, j, found, capacity)


@njit(nogil=True, cache=True, inline="always")
def _correct(src, grad, raw, first, lo, hi):
    """``src + grad`` over ``lo .. hi`` of a chunk, written in place into the tensor whose
    bytes are ``raw`` (the chunk at value ``first``)."""
    out = raw.view(np.float32)
    for i in range(lo, hi):
        out[first + i] = src[i] + grad[i]


@njit(nogil=True, cache=True)
def _correct_and_record(src, grad, raw, first, lo, hi, t, index, values, j, found, capacity):
    """``lo .. hi`` of a chunk corrected in place into ``raw``'s tensor and its survivors
    recorded (``_record``); out of slots, the rest corrected only."""
    _correct(src, grad, raw, first, lo, hi)
    return _record(raw.view(np.float32)[first:first + hi], t, True, first, lo, hi, index, values, j, found, capacity)


@njit(nogil=True, cache=True)
def _add_and_drop_chunk(src, grad, res, t, first, index, values, j, capacity, raw, address):
    """Alg. 1 on one chunk (``res``: the chunk of the corrected tensor, at ``first``). With
    ``raw`` (the whole corrected tensor's bytes, at ``address``: a large tensor) streamed
    (``_add_and_drop_streamed``), else in place."""
    if raw.size:
        return _add_and_drop_streamed(src, grad, t, first, index, values, j, capacity, raw, address)
    return _add_and_drop_piece(src, grad, res, t, first, index, values, j, 0, capacity)


@njit(nogil=True, cache=True)
def _drop_chunk(res, t, keep, first, index, values, j, capacity):
    """The survivors of an already corrected chunk, found by the same 64-bit masks."""
    found, n = 0, res.size
    full = n - n % BLOCK
    for base in range(0, full, BLOCK):
        mask = np.uint64(0)
        for k in range(BLOCK):
            mask |= np.uint64(not abs(res[base + k]) <= t) << np.uint64(k)
        while mask:
            i = base + trailing_zeros(mask)
            mask &= mask - np.uint64(1)
            if found == capacity:
                return found, i
            index[j + found], values[j + found] = first + i, res[i]
            found += 1
            if keep:
                res[i] = 0.0
    return _record(res, t, keep, first, full, n, index, values, j, found, capacity)


@njit(parallel=True, nogil=True, cache=True)
def drop_chunks(src, grad, res, add, starts, stops, thresholds, keep, capacity, index, values, found, stopped, raw,
                address):
    """Every chunk [starts[c], stops[c]) against its threshold; ``add``: ``res`` is first
    written with ``src + grad`` (``src`` may be ``res``), and implies ``keep``; then
    ``raw`` (``stream.destination(res)``, at ``address``), when not empty, takes the
    corrected values by streamed stores (``src`` must then not be ``res``)."""
    for c in prange(starts.size):
        a, b = starts[c], stops[c]
        if add:
            found[c], stopped[c] = _add_and_drop_chunk(src[a:b], grad[a:b], res[a:b], thresholds[c], a, index, values,
                                                       c * capacity, capacity, raw, address)
        else:
            found[c], stopped[c] = _drop_chunk(res[a:b], thresholds[c], keep, a, index, values, c * capacity, capacity)


@njit(parallel=True, nogil=True, cache=True)
def gather(index, values, capacity, found, starts, out_index, out_values):
    """Each chunk's ``found[c]`` survivors, from its slots (at ``c * capacity``) to
    ``starts[c]`` of the outputs, in parallel; returns how many of them are NaN or Inf
    (the exponent's bits all set), which refuse the message."""
    bad = 0
    for c in prange(found.size):
        a, first, k = starts[c], c * capacity, found[c]
        out_index[a:a + k] = index[first:first + k]
        chunk = values[first:first + k]
        out_values[a:a + k] = chunk
        bad += non_finite(chunk)
    return bad


@njit(nogil=True, cache=True)
def non_finite(values):
    """How many of the float32 ``values`` are NaN or Inf."""
    bits, count = values.view(np.uint32), 0
    for i in range(bits.size):
        count += bits[i] & EXPONENT == EXPONENT
    return count


@njit(nogil=True, cache=True)
def rest(res, a, b, t, keep):
    """(index, values) of the survivors in the corrected ``res[a:b]``, zeroed when ``keep``."""
    n = 0
    for i in range(a, b):
        n += not abs(res[i]) <= t
    index, values = np.empty(n, np.int64), np.empty(n, np.float32)
    _record(res, t, keep, 0, a, b, index, values, 0, 0, n)
    return index, values


@njit(parallel=True, nogil=True, cache=True)
def sampled_magnitudes(src, grad, positions, out):
    """``out[j] = |src[p] + grad[p]|`` at the sampled positions (``grad`` empty: ``|src[p]|``):
    the threshold's sample read straight from the uncorrected tensors, the random reads
    spread over every thread."""
    add = grad.size > 0
    for j in prange(positions.size):
        p = positions[j]
        out[j] = abs(src[p] + grad[p]) if add else abs(src[p])
