"""A sparse message into a dense GPU tensor in one Triton kernel: ``out = 0; out[index] =
values`` (``scatter.zeros_with``'s device path), for top-k's and gradient dropping's
decodes.

torch's way is two launches and two writes: ``out.fill_(0)`` writes every line of ``out``,
then ``out[index] = values`` (an index kernel and its checks) writes the survivors' lines
again, by then long gone from the cache. At 250M values and 1% survivors on an H200 the
two took 213 and 138 µs of device time (``gpu_bench``'s codec profile, part 11, 6c6dbb9).
Here one program per ``BLOCK`` values of ``out`` zeroes its block, waits for its threads
(a barrier: their zeros are then written before any survivor), and writes the survivors
that fall in its block, ``PIECE`` at a time, found by one ``torch.searchsorted`` of the
blocks' starts in the ascending ``index``, so that each survivor's line is written while
the block's zeros are likely still in the cache; the call is two launches (the search and
the kernel) with no wait for the device.

The index must be ascending and within ``out``, as a checked message's is. A damaged one
(judged later inside ``wire.deferred_checks``, clamped into ``out`` meanwhile) writes only
inside ``out``, and the judge spoils ``out`` anyway.

``KERNEL = "torch"`` (the default) keeps torch's two operations; ``"triton"`` takes this
kernel. ``gpu_bench``'s ``scatters`` part times both on a GPU in one process; none has
run it yet, so the library keeps torch's. On the CPU the test suite runs this kernel under
Triton's interpreter against the host's scatter.
"""

from __future__ import annotations

import functools

import torch

from . import triton_crc
from .triton_crc import AVAILABLE

KERNEL = "torch"        # "torch" (fill, then index) or "triton" (``_zeros_with``)
KERNELS = ("torch", "triton")
BLOCK = 4096            # values of ``out`` per program
PIECE = 128             # survivors written per step
WARPS = 4


def usable(out: torch.Tensor, index: torch.Tensor, values: torch.Tensor) -> bool:
    """Whether ``_zeros_with`` takes the work: chosen (``KERNEL``), Triton present, ``out``
    contiguous float32 and every tensor on one GPU (or on the CPU under
    ``TRITON_INTERPRET=1``)."""
    if KERNEL not in KERNELS:
        raise ValueError(f"triton_scatter.KERNEL must be one of {KERNELS}, got {KERNEL!r}")
    return (KERNEL == "triton" and out.dtype == torch.float32 and out.dim() == 1 and triton_crc.triton_runs(out)
            and index.device == values.device == out.device)  # made contiguous by ``zeros_with``


if AVAILABLE:
    import triton
    import triton.language as tl

    @triton.jit
    def _zeros_with(out, n, index, values, bounds, BLOCK: tl.constexpr, PIECE: tl.constexpr):
        """Block p of ``out`` zeroed, then its survivors ``bounds[p]:bounds[p + 1]`` written."""
        p = tl.program_id(0)
        at = p.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out + at, tl.zeros((BLOCK,), tl.float32), mask=at < n)
        tl.debug_barrier()  # every thread's zeros before any survivor
        lo, hi = tl.load(bounds + p), tl.load(bounds + p + 1)
        for first in range(lo, hi, PIECE):
            j = first + tl.arange(0, PIECE)
            inside = j < hi
            i = tl.load(index + j, mask=inside, other=0).to(tl.int64)
            tl.store(out + i, tl.load(values + j, mask=inside, other=0.0).to(tl.float32), mask=inside)


@functools.lru_cache(maxsize=16)
def _block_starts(n: int, device: str, dtype: torch.dtype) -> torch.Tensor:
    """The first position of each block of ``n`` values, and ``n`` (in the index's dtype;
    kept: a tensor's size is the same every step)."""
    blocks = -(-n // BLOCK)
    return torch.clamp(torch.arange(blocks + 1, dtype=torch.int64) * BLOCK, max=n).to(device=device, dtype=dtype)


def zeros_with(out: torch.Tensor, index: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    """``out`` zeroed, with ``values`` at ``index`` (ascending, in range); ``usable`` must hold."""
    n = out.numel()
    if n == 0:
        return out
    index, values = index.contiguous(), values.contiguous()
    starts = _block_starts(n, str(out.device), index.dtype)
    bounds = torch.searchsorted(index, starts)  # block p's survivors: bounds[p]:bounds[p + 1]
    _zeros_with[(starts.numel() - 1,)](out, n, index, values, bounds, BLOCK=BLOCK, PIECE=PIECE, num_warps=WARPS)
    return out
