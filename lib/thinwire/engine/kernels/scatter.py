"""A sparse message into a dense tensor in one write: ``out = 0; out[index] = values``.

Zeroing the whole tensor and then scattering the survivors writes every cache line the
survivors land in twice, the second time after it has left the cache. Here each chunk of
``out`` (a quarter of the L2 cache) is zeroed and then receives its own survivors (found
by binary search in the ascending index) while it is still cached, chunks in parallel.
A large output's chunks are built in a cached buffer instead and streamed out
(``stream.py``), so its lines are written without being read first. On a GPU, torch's
fill and index operations.
"""

from __future__ import annotations

import numba
import numpy as np
import torch
from numba import njit, prange

from . import device, stream

CHUNK = 1 << 16


@njit(parallel=True, nogil=True, cache=True)
def _scatter(out, index, values, bounds, raw, address, scratch):
    n = out.size
    for c in prange(bounds.size - 1):
        lo = c * CHUNK
        hi = min(n, lo + CHUNK)
        if raw.size == 0:
            out[lo:hi] = 0.0
            for j in range(bounds[c], bounds[c + 1]):
                out[index[j]] = values[j]
        else:  # a large output: the chunk is built in the thread's cached buffer, then streamed out
            chunk = scratch[numba.get_thread_id()][:hi - lo]
            chunk[:] = 0.0
            for j in range(bounds[c], bounds[c + 1]):
                chunk[index[j] - lo] = values[j]
            stream.stream_out(chunk.view(np.uint8), raw, 4 * lo, address)


@njit(nogil=True, cache=True)
def _ascending_within(index, numel):
    disordered = 0
    for i in range(1, index.size):  # a reduction without a branch: it vectorizes
        disordered += index[i - 1] >= index[i]
    return disordered == 0 and index[0] >= 0 and index[index.size - 1] < numel


def facts(index: torch.Tensor) -> torch.Tensor:
    """(first, last, how many neighbours are out of order) of a non-empty int32 or int64
    index, as one tensor on its device: what ``sound`` judges, read in one copy."""
    return torch.stack([index[0], index[-1], (index[1:] <= index[:-1]).sum().to(index.dtype)])


def sound(numel: int, facts: np.ndarray) -> bool:
    """Whether an index whose ``facts`` these are ascends strictly within [0, numel)."""
    first, last, disordered = facts.tolist()
    return disordered == 0 and 0 <= first and last < numel


def ascending_within(index: torch.Tensor, numel: int) -> bool:
    """Whether ``index`` (1-D int32 or int64, not empty) ascends strictly within [0, numel):
    what ``zeros_with`` asks of it. On the host one serial pass (no thread team to wake);
    on a device its ``facts``, copied once."""
    if not device.on_device(index):
        return bool(_ascending_within(index.numpy(), numel))
    return sound(numel, facts(index).cpu().numpy())


@njit(nogil=True, cache=True)
def _subtract_at(out, index, values):
    for j in range(index.size):
        out[index[j]] -= values[j]


def subtract_at(out: torch.Tensor, index: torch.Tensor, values: torch.Tensor) -> None:
    """``out[index] -= values`` in place (``out`` 1-D float32; ``index`` int32 or int64,
    distinct and in range: a checked message's). On the host one thread writes the k
    entries (no thread team to wake for O(k) work); on a device torch's ``index_add_``."""
    if device.on_device(out) or index.device.type != "cpu":
        out.index_add_(0, device.put(index, out.device), device.put(values, out.device, out.dtype), alpha=-1)
        return
    _subtract_at(out.numpy(), index.numpy(), values.numpy())


def zeros_with(out: torch.Tensor, index: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    """``out`` (1-D float32, contiguous) zeroed, with ``values`` at ``index`` (int32 or
    int64, strictly ascending, in range: the caller has checked the message with
    ``ascending_within``; on the host an index out of order could write outside ``out``)."""
    if device.on_device(out) or index.device.type != "cpu":
        out.fill_(0)
        out[device.put(index, out.device).long()] = device.put(values, out.device, out.dtype)
        return out
    idx = index.numpy()
    starts = np.arange(-(-out.numel() // CHUNK), dtype=np.int64) * CHUNK
    bounds = np.append(np.searchsorted(idx, starts), idx.size)  # chunk c's survivors: bounds[c]:bounds[c + 1]
    dense = out.numpy()
    raw = stream.destination(dense)
    scratch = np.empty((numba.config.NUMBA_NUM_THREADS if raw.size else 0, CHUNK), np.float32)  # one per thread
    _scatter(dense, idx, values.to(torch.float32).numpy(), bounds, raw, dense.ctypes.data, scratch)
    return out
