"""A sparse message into a dense tensor in one write: ``out = 0; out[index] = values``.

Zeroing the whole tensor and then scattering the survivors writes every cache line the
survivors land in twice, the second time after it has left the cache. Here each chunk of
``out`` (a quarter of the L2 cache) is zeroed and then receives its own survivors (found
by binary search in the ascending index) while it is still cached, chunks in parallel.
A large output's chunks are built in a cached buffer instead and streamed out
(``stream.py``), so its lines are written without being read first. On a GPU, torch's
fill and index operations, or the same one write in a Triton kernel
(``triton_scatter.py``, where ``triton_scatter.KERNEL`` chooses it).
"""

from __future__ import annotations

import numba
import numpy as np
import torch
from numba import njit, prange

from . import device, stream, triton_scatter

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


def zeros_with(out: torch.Tensor, index: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    """``out`` (1-D float32, contiguous) zeroed, with ``values`` at ``index`` (ascending, in
    range: the caller has checked the message)."""
    if device.on_device(out) or index.device.type != "cpu":
        if triton_scatter.usable(out, index, values):
            return triton_scatter.zeros_with(out, index, values)
        out.fill_(0)
        out[device.put(index, out.device)] = device.put(values, out.device, out.dtype)
        return out
    idx = index.numpy()
    starts = np.arange(-(-out.numel() // CHUNK), dtype=np.int64) * CHUNK
    bounds = np.append(np.searchsorted(idx, starts), idx.size)  # chunk c's survivors: bounds[c]:bounds[c + 1]
    dense = out.numpy()
    raw = stream.destination(dense)
    scratch = np.empty((numba.config.NUMBA_NUM_THREADS if raw.size else 0, CHUNK), np.float32)  # one per thread
    _scatter(dense, idx, values.to(torch.float32).numpy(), bounds, raw, dense.ctypes.data, scratch)
    return out
