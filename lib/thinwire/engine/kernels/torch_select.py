"""``select.top_k`` in torch operations on the tensor's device: the same threshold, the
same candidates, the same k-th value and the same tie rule, so the same indices.

On a GPU the host waits for the device once per threshold tried (usually once): the
candidates' count and whether every value is finite come back together, and both
compactions use ``torch.nonzero_static`` with that count or with k, so neither waits. The
k-th largest candidate is found by ``kth_smallest`` (``torch.topk`` over the smaller
side). Where Triton runs the candidates are counted (NaN and Inf with them) and compacted
by two Triton kernels (``triton_drop.at_least``); elsewhere by a magnitude tensor, a mask
and ``nonzero_static``."""

from __future__ import annotations

import torch

from . import device, triton_drop
from .select import sample, threshold_rank


def kth_smallest(values: torch.Tensor, j: int) -> torch.Tensor:
    """The j-th smallest (1-based) of a 1-d tensor, as a 0-d tensor on its device (no wait).
    On the device path (``device.on_device``: a GPU, or a CPU tensor where that path is
    forced, so that the device audit counts what a GPU does): the largest of the j smallest
    (or the least of the n - j + 1 largest, whichever set is smaller) by ``torch.topk``,
    unsorted, since CUDA's ``kthvalue`` selects within one thread block per slice and a
    whole tensor is one slice (pytorch/pytorch#75599; the engine's README records what a
    sort and ``kthvalue`` measured); on the host ``torch.kthvalue``. Both give the same
    value, ties and all."""
    if not device.on_device(values):
        return torch.kthvalue(values, j).values
    n = values.numel()
    if j <= n - j + 1:
        return torch.topk(values, j, largest=False, sorted=False).values.max()
    return torch.topk(values, n - j + 1, sorted=False).values.min()


def _candidates(flat: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor] | None:
    """(ascending indices, magnitudes) of at least k entries, every one with |x| at least
    the sample's threshold, or None when ``flat`` holds NaN or Inf: counted, then compacted
    by ``triton_drop.at_least`` where it is usable, else by torch's operations."""
    thresholds = sample(flat)
    rank = threshold_rank(k, flat.numel(), thresholds.numel())
    fused = triton_drop.usable(flat)
    if not fused:
        magnitude_all = flat.abs()
        # |x| is >= 0 or NaN, so the largest (NaN where any is, inf where any is) is below inf
        # only if all are finite: one read of the magnitudes, where isfinite(...).all() made
        # four passes over them (two writing a tensor of their size) and a reduction
        finite = (magnitude_all.max() < float("inf")).to(torch.int64)
    while True:
        t = thresholds[rank - 1] if rank <= thresholds.numel() else torch.zeros((), device=flat.device)
        if fused:
            count, non_finite, compact = triton_drop.at_least(flat, t)
        else:
            candidates = magnitude_all >= t
            count, all_finite = torch.stack([candidates.sum(), finite]).tolist()
            non_finite = not all_finite
        if non_finite:
            return None
        if count >= k:
            break
        rank *= 4
    if fused:
        index, values = compact()
        return index, values.abs()
    index = torch.nonzero_static(candidates, size=count).reshape(-1)  # ascending
    return index, magnitude_all[index]


def top_k(flat: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor, bool]:
    found = _candidates(flat, k)
    if found is None:
        return torch.empty(0, dtype=torch.int32, device=flat.device), torch.empty(0, device=flat.device), True
    index, magnitude = found
    count = index.numel()
    v = kth_smallest(magnitude, count - k + 1)  # the k-th largest
    above = magnitude > v
    tied = magnitude == v
    ties = tied & (torch.cumsum(tied, 0) <= k - above.sum())  # the lowest indices among the ties
    index = index[torch.nonzero_static(above | ties, size=k).reshape(-1)]
    return index.to(torch.int32), flat[index], False
