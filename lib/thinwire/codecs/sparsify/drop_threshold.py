"""Choosing the gradient-dropping threshold: "R% of |g| is smaller" (Aji & Heafield 2017,
Alg. 1 and Sec. 4).

- ``exact``: the round(R n)-th smallest |g| (a full selection, as expensive as top-k).
- ``sampled``: the same order statistic of a sample of m = max(ceil(fraction n),
  min(n, min_sample)) values (the paper samples 0.1%). ``random`` draws positions
  uniformly with replacement from the endpoint's generator; ``stride`` takes every
  (n // m)-th value from the start, as Marian does.

Values with ``|g| > threshold`` survive. From a sample we take order statistic
j = round(R (m + 1)) (1-based): the expected share of the population above the j-th of
m sampled values is (m + 1 - j) / (m + 1) ~ 1 - R, so the achieved density is unbiased
even for small m. (Marian indexes ``rate * m - 1``, which keeps about 1/m too many.)
A ratio of 0 keeps everything: the threshold is -inf.
"""

from __future__ import annotations

import math

import torch

from ...engine import kth_smallest, on_device, order, put

SAMPLINGS = ("random", "stride")


def sample_size(n: int, fraction: float, min_sample: int) -> int:
    return min(n, max(math.ceil(fraction * n), min_sample))


def sample_positions(n: int, m: int, sampling: str, generator: torch.Generator) -> torch.Tensor:
    """int64 positions of the m sampled values among n."""
    if m >= n:
        return torch.arange(n)
    if sampling == "random":
        return torch.randint(0, n, (m,), generator=generator)
    return torch.arange(m) * (n // m)


def narrowed(positions: torch.Tensor, stop: int) -> torch.Tensor:
    """``positions`` (below ``stop``) as int32 where ``stop`` fits: what a device path copies
    to the device and gathers by, half the bytes of int64 (the same positions)."""
    return positions.to(torch.int32) if stop <= 2**31 else positions


def threshold_from_sample(sample_abs: torch.Tensor, ratio: float) -> torch.Tensor:
    """The order statistic above and how many of ``sample_abs`` (|values|) equal it
    (``order_statistic``)."""
    m = sample_abs.numel()
    j = min(m, round(ratio * (m + 1)))
    return order_statistic(sample_abs, j)


def exact_threshold(values_abs: torch.Tensor, ratio: float) -> torch.Tensor:
    """The round(R n)-th smallest |value| and how many values equal it (``order_statistic``)."""
    return order_statistic(values_abs, round(ratio * values_abs.numel()))


def order_statistic(magnitude: torch.Tensor, j: int) -> torch.Tensor:
    """[the j-th smallest of ``magnitude`` (-inf where j is 0), how many equal it] as float64
    on its device, not read: a device path reads it with the survivors' count, in the same
    wait for the device (``drop_survivors``). The selection on a device is by
    ``torch_select.kth_smallest``; on the host, float32 values are selected by
    ``engine/kernels/order.py``'s radix select (the same value, ties and all)."""
    if j < 1 or not magnitude.numel():
        return put(torch.tensor([-math.inf, 0.0], dtype=torch.float64), magnitude.device)
    if not on_device(magnitude) and magnitude.dtype == torch.float32 and magnitude.dim() == 1:
        t, equal = order.kth_smallest(magnitude.contiguous().numpy(), j)
        return torch.tensor([t, equal], dtype=torch.float64)
    t = kth_smallest(magnitude, j)
    return torch.stack([t.double(), (magnitude == t).sum(dtype=torch.float64)])
