"""``select.top_k`` in torch operations on the tensor's device: the same threshold, the
same candidates, the same k-th value and the same tie rule, so the same indices."""

from __future__ import annotations

import torch

from .select import sample, threshold_rank


def top_k(flat: torch.Tensor, k: int) -> tuple[torch.Tensor, bool]:
    magnitude_all = flat.abs()
    if not bool(torch.isfinite(magnitude_all).all()):
        return torch.empty(0, dtype=torch.int32, device=flat.device), True
    thresholds = sample(flat)
    rank = threshold_rank(k, flat.numel(), thresholds.numel())
    while True:
        t = thresholds[rank - 1] if rank <= thresholds.numel() else torch.zeros((), device=flat.device)
        index = torch.nonzero(magnitude_all >= t).reshape(-1)  # ascending
        if index.numel() >= k:
            break
        rank *= 4
    magnitude = magnitude_all[index]
    v = torch.kthvalue(magnitude, index.numel() - k + 1).values  # the k-th largest
    above = magnitude > v
    ties = (magnitude == v) & (torch.cumsum(magnitude == v, 0) <= k - int(above.sum()))
    return index[above | ties].to(torch.int32), False
