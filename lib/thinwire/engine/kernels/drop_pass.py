"""One pass over memory that applies Alg. 1 of Aji & Heafield (2017) to a whole tensor:

    corrected = residual + gradient          (in place, in ``residual``)
    survivors = { i : |corrected[i]| > threshold of i's segment }   (>= with ``inclusive``)
    values    = corrected[survivors];  residual[survivors] = 0

On CPU this is one compiled kernel over chunks of every segment in parallel
(``drop.py``): the tensor is read and written once. On a GPU (``device.py``)
the same steps run in two Triton kernels (``triton_drop.py``) where Triton runs,
else as whole-tensor torch ops on the device: the same survivors, so the same message.

A NaN compares false with everything, so the survivor test is written as
``not |x| <= t``: NaN and Inf always survive, and the caller can reject them by looking
at the survivors alone.
"""

from __future__ import annotations

import numpy as np
import torch

from . import device, drop, stream, team, triton_drop
from .kept import kept

CHUNK = 1 << 18


def drop_pass(residual: torch.Tensor, gradient: torch.Tensor | None,
              segments: list[tuple[int, int, float]], keep_residual: bool = True, inclusive: bool = False,
              density: float = 1.0, source: torch.Tensor | None = None, meanwhile=None, counted: bool = False):
    """Survivor indices (int64, ascending) and their corrected values (float32); with
    ``counted`` (on the host only), a third item: how many of the values are NaN or Inf.

    ``residual``: contiguous 1-D float32, updated in place when ``keep_residual`` (the
    corrected values, survivors zeroed); read only otherwise (then ``gradient`` must be
    None). ``segments``: (start, stop, threshold) covering the tensor in order.
    ``inclusive``: values equal to a threshold above 0 survive too (ties kept); zeros never do.
    ``density``: the share of survivors expected (it sizes each chunk's output slots; more
    survivors cost a second look at the chunks that overflow, never a wrong result).
    ``source``: with a gradient, the corrected tensor is ``source + gradient`` written into
    ``residual`` (``source`` is read only); None: ``residual`` itself.
    ``meanwhile``: host work to do while the device works on the pass (called once, on the
    device path only).
    """
    if device.on_device(residual):
        if triton_drop.usable(residual, gradient, source):  # two passes in Triton, no wait per segment
            return triton_drop.drop(residual, gradient, segments, keep_residual, inclusive, source, meanwhile)
        if gradient is not None:
            torch.add(residual if source is None else source, gradient, out=residual)
        if meanwhile is not None:
            meanwhile()
        return _drop_torch(residual, segments, keep_residual, inclusive)
    below = np.float32(-np.inf)  # |x| >= t is |x| > (the float32 below t)
    jobs = [(a, min(a + CHUNK, stop), np.nextafter(np.float32(t), below) if inclusive and t > 0 else t)
            for start, stop, t in segments for a in range(start, stop, CHUNK)]
    if not jobs:
        got = torch.zeros(0, dtype=torch.int64), torch.zeros(0, dtype=torch.float32)
        return got + (0,) if counted else got
    starts, stops, thresholds = (np.array(column, dtype) for column, dtype in
                                 zip(zip(*jobs), (np.int64, np.int64, np.float32)))
    capacity = int(min(CHUNK, 4 * density * CHUNK + 64))
    index, values = kept("drop.slots", len(jobs) * capacity, (np.int64, np.float32))  # this thread's, reused
    found, stopped = np.empty(len(jobs), np.int64), np.empty(len(jobs), np.int64)
    res = residual.numpy()
    add = gradient is not None
    src = res if source is None or not add else source.numpy()
    raw = stream.destination(res) if add and src is not res else res[:0].view(np.uint8)
    drop.drop_chunks(src, gradient.numpy() if add else res[:0], res, add, starts, stops, thresholds, keep_residual,
                     capacity, index, values, found, stopped, raw, res.ctypes.data)
    if not (stopped >= 0).any():  # every chunk's survivors in its slots: moved out (by a team for a large message)
        at = np.zeros(len(jobs), np.int64)
        np.cumsum(found[:-1], out=at[1:])
        total = int(at[-1] + found[-1])
        out_index, out_values = np.empty(total, np.int64), np.empty(total, np.float32)
        with team.alone_if_small(12 * total, team.STEP):
            bad = drop.gather(index, values, capacity, found, at, out_index, out_values)
        got = torch.from_numpy(out_index), torch.from_numpy(out_values)
        return got + (bad,) if counted else got
    parts_i, parts_v = [], []
    for c in range(len(jobs)):
        first = c * capacity
        parts_i.append(index[first:first + found[c]])
        parts_v.append(values[first:first + found[c]])
        if stopped[c] >= 0:  # more survivors than slots: the chunk's rest, already corrected
            i, v = drop.rest(res, starts[c] + stopped[c], stops[c], thresholds[c], keep_residual)
            parts_i.append(i)
            parts_v.append(v)
    out_values = np.concatenate(parts_v)
    got = torch.from_numpy(np.concatenate(parts_i)), torch.from_numpy(out_values)
    return got + (drop.non_finite(out_values),) if counted else got


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
    return index, values  # on the tensor's device: the message is written from there
