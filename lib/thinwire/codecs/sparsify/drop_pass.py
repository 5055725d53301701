"""One pass over memory that applies Alg. 1 of Aji & Heafield (2017) to a whole tensor:

    corrected = residual + gradient          (in place, in ``residual``)
    survivors = { i : |corrected[i]| > threshold of i's segment }   (>= with ``inclusive``)
    values    = corrected[survivors];  residual[survivors] = 0

On CPU the tensor is walked in cache-sized chunks (numpy ufuncs with ``out=``, which
release the GIL, spread over ``torch.get_num_threads()`` threads): the add, magnitude,
comparison, index search and zeroing then read main memory once instead of five times
(torch's comparison kernels are not vectorized on CPU and ``nonzero`` is single-threaded). Elsewhere (CUDA)
the same steps run as whole-tensor torch ops.

A NaN compares false with everything, so the survivor test is written as
``not |x| <= t``: NaN and Inf always survive, and the caller can reject them by looking
at the survivors alone.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch

CHUNK = 1 << 18
_pools: dict[int, ThreadPoolExecutor] = {}


def _pool(size: int) -> ThreadPoolExecutor:
    """One pool per thread count (``torch.get_num_threads()`` may change at run time)."""
    if size not in _pools:
        _pools[size] = ThreadPoolExecutor(max_workers=size)
    return _pools[size]


def drop_pass(residual: torch.Tensor, gradient: torch.Tensor | None,
              segments: list[tuple[int, int, float]], keep_residual: bool = True, inclusive: bool = False):
    """Survivor indices (int64, ascending) and their corrected values (float32).

    ``residual``: contiguous 1-D float32, updated in place when ``keep_residual`` (the
    corrected values, survivors zeroed); read only otherwise (then ``gradient`` must be
    None). ``segments``: (start, stop, threshold) covering the tensor in order.
    ``inclusive``: values equal to a threshold above 0 survive too (ties kept); zeros never do.
    """
    if residual.device.type != "cpu":
        if gradient is not None:
            residual.add_(gradient)
        return _drop_torch(residual, segments, keep_residual, inclusive)
    res = residual.numpy()
    grad = None if gradient is None else gradient.numpy()
    jobs = [(s, min(s + CHUNK, stop), t, inclusive and t > 0)
            for start, stop, t in segments for s in range(start, stop, CHUNK)]
    workers = min(len(jobs), max(1, torch.get_num_threads()))
    if workers <= 1:
        found = [_chunks(res, grad, jobs, keep_residual)]
    else:
        share = -(-len(jobs) // workers)
        futures = [_pool(workers).submit(_chunks, res, grad, jobs[i:i + share], keep_residual)
                   for i in range(0, len(jobs), share)]
        found = [f.result() for f in futures]
    index = np.concatenate([i for part in found for i in part[0]]) if jobs else np.zeros(0, np.int64)
    values = np.concatenate([v for part in found for v in part[1]]) if jobs else np.zeros(0, np.float32)
    return torch.from_numpy(index), torch.from_numpy(values)


def _chunks(res, grad, jobs, keep_residual):
    magnitude = np.empty(CHUNK, dtype=np.float32)
    small = np.empty(CHUNK, dtype=bool)
    indices, values = [], []
    for start, stop, threshold, strict_below in jobs:
        x = res[start:stop]
        n = stop - start
        if grad is not None:
            np.add(x, grad[start:stop], out=x)
        np.abs(x, out=magnitude[:n])
        (np.less if strict_below else np.less_equal)(magnitude[:n], threshold, out=small[:n])
        np.logical_not(small[:n], out=small[:n])
        hit = np.flatnonzero(small[:n])
        values.append(x[hit])
        if keep_residual:
            x[hit] = 0.0
        indices.append(hit + start)
    return indices, values


def _drop_torch(residual, segments, keep_residual, inclusive):
    parts = []
    for start, stop, threshold in segments:
        x = residual[start:stop].abs()
        small = x < threshold if inclusive and threshold > 0 else x <= threshold
        parts.append(torch.nonzero(~small).squeeze(1) + start)
    index = torch.cat(parts) if parts else torch.zeros(0, dtype=torch.int64, device=residual.device)
    values = residual[index]
    if keep_residual:
        residual[index] = 0.0
    return index.cpu(), values.cpu()
