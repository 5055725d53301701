"""Which path a tensor's kernel work takes: the compiled host kernels (numba) for a CPU
tensor, torch operations on the tensor's own device for any other (a GPU), so that a GPU
tensor is never copied to the host to be packed or quantized. Both paths write the same
bytes; ``forced`` sends CPU tensors down the device path too, which is how the CPU test
suite compares the two byte for byte without a GPU.
"""

from __future__ import annotations

from contextlib import contextmanager

import torch

_forced = False


def on_device(tensor: torch.Tensor) -> bool:
    """True when ``tensor``'s kernel work takes the torch-operations path."""
    return _forced or tensor.device.type != "cpu"


@contextmanager
def forced():
    """Within the block, CPU tensors take the device path as well."""
    global _forced
    before, _forced = _forced, True
    try:
        yield
    finally:
        _forced = before


def put(t: torch.Tensor, where: torch.device | str, dtype: torch.dtype | None = None) -> torch.Tensor:
    """``t`` (in ``dtype``) on ``where``. A host tensor goes without waiting for the device:
    torch synchronizes the stream after a blocking copy to a GPU (everything queued before
    it finishes first), where a non-blocking one from pageable memory is staged at once and
    waits for nothing, so the host tensor may change right after. A GPU tensor goes as
    ``to`` takes it (to the host: a blocking copy, its values there when the call returns)."""
    return t.to(where, dtype or t.dtype, non_blocking=t.device.type == "cpu")


def written_through(view: torch.Tensor, where: torch.device, direct: bool, write) -> None:
    """``write(target)`` for a message part ``view``: into ``view`` itself where the kernel
    can take it (``direct``), else into a tensor of its shape on ``where`` (a device
    kernel cannot write a message in host memory) that is then copied into ``view``."""
    target = view if direct else torch.empty(view.shape, dtype=view.dtype, device=where)
    write(target)
    if target is not view:
        view.copy_(target)
