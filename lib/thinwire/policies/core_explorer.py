"""Slim-DP's best response mixed with exploration (Sun et al. 2018, Sec. 3.2-3.4), as a
policy: which coordinates of a tensor an agent sends this round.

For a tensor x of n values (a local agent's update delta, or the center agent's model w):
1. CoreSelection (every ``refresh`` = q rounds, and the first time): the core is the
   round((alpha - epsilon) n) coordinates of largest |x| (Eq. 2 and 3: the utility of a
   subset is its L1 norm, so the best response is the largest entries). ``selection=
   "exact"`` takes them with a top-k; ``"sampled"`` thresholds |x| at the quantile of a
   random sample (``sample`` of the values, at least 1000) and keeps what lies above, so
   the core's size is close to, not exactly, (alpha - epsilon) n (top-k is slow on CPU).
2. Exploration (every round): round(epsilon n) coordinates drawn uniformly without
   replacement from outside the core, from this policy's own generator (one key per
   draw, expanded by a counter-based hash: ``engine/kernels/sample.py``, whose cost is
   proportional to the explorer, not to n).
3. The decision carries the explorer as ``keys``, the core as ``core`` and ``refresh``
   when the core is new this round, for the key-caching codec (``keycache``): between
   refreshes the core's keys stay cached on both ends and only its values travel (Sec. 3.4.1).
With alpha = 1 and epsilon = 0 the core is every coordinate: Plump-DP.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ..engine import check_finite, check_representable, sample_outside
from ..validation import check, float_in
from .base import Decision, Policy
from .registry import register

SELECTIONS = ("exact", "sampled")
SAMPLE = 0.01       # share of the values the sampled selection ranks
MIN_SAMPLE = 1000


def check_core_explorer(alpha, epsilon, refresh, selection, sample=SAMPLE) -> None:
    """``ValueError`` naming the first bad Slim-DP parameter."""
    float_in("alpha", alpha, 0.0, 1.0)
    check("alpha", alpha, alpha > 0, "in (0, 1]")
    float_in("epsilon", epsilon, 0.0, 1.0)
    check("epsilon", epsilon, epsilon <= alpha, f"in [0, alpha] = [0, {alpha}]")
    check("refresh", refresh, isinstance(refresh, int) and not isinstance(refresh, bool) and refresh >= 1,
          "an int >= 1 (q, rounds between core selections)")
    check("selection", selection, selection in SELECTIONS, f"one of {list(SELECTIONS)}")
    float_in("sample", sample, 0.0, 1.0)
    check("sample", sample, sample > 0, "in (0, 1]")


@register
class CoreExplorer(Policy):
    name = "core_explorer"

    def __init__(self, alpha: float = 0.3, epsilon: float = 0.15, refresh: int = 10, selection: str = "exact",
                 sample: float = SAMPLE, seed: int = 0):
        check_core_explorer(alpha, epsilon, refresh, selection, sample)
        super().__init__(seed)
        self.alpha, self.epsilon, self.refresh = float(alpha), float(epsilon), refresh
        self.selection, self.sample = selection, float(sample)
        sample_outside(np.zeros(8, dtype=bool), 1, 8, 0)  # load the compiled sampler before anything is timed

    def params(self) -> dict:
        return {"alpha": self.alpha, "epsilon": self.epsilon, "refresh": self.refresh, "selection": self.selection,
                "sample": self.sample}

    def sizes(self, n: int) -> tuple[int, int]:
        """(core, explorer) sizes for a tensor of ``n`` values."""
        core = min(n, round((self.alpha - self.epsilon) * n))
        return core, min(n - core, round(self.epsilon * n))

    def decide(self, round, key, tensor) -> Decision:
        flat = tensor.detach().reshape(-1)
        # refused before the core is cached or the explorer drawn, as the codec would refuse it
        check_representable(flat, key)
        check_finite(flat, key, self)
        last = self.memory.get(f"{key}.round")
        refresh = last is None or round - int(last) >= self.refresh
        if refresh:
            core = self._select(flat)
            in_core = torch.zeros(flat.numel(), dtype=torch.bool)
            in_core[core.cpu()] = True
            self.memory[f"{key}.core"], self.memory[f"{key}.in_core"] = core, in_core
            self.memory[f"{key}.round"] = torch.tensor(round)
        core, in_core = self.memory[f"{key}.core"], self.memory[f"{key}.in_core"]
        free = flat.numel() - core.numel()
        count = min(free, self.sizes(flat.numel())[1])
        draw_key = int(torch.randint(0, 2**62, (1,), generator=self.generator))
        explorer = torch.from_numpy(sample_outside(in_core.numpy(), count, free, draw_key))
        return Decision(keys=explorer.to(flat.device), core=core, refresh=refresh)

    def _select(self, flat: torch.Tensor) -> torch.Tensor:
        """The core's keys, ascending (int64)."""
        n = flat.numel()
        k, _ = self.sizes(n)
        magnitude = flat.abs()
        if k == n:
            return torch.arange(n, device=flat.device)
        if k == 0:
            return torch.empty(0, dtype=torch.int64, device=flat.device)
        if self.selection == "exact":
            return torch.topk(magnitude, k, sorted=False).indices.sort().values
        m = min(n, max(MIN_SAMPLE, math.ceil(self.sample * n)))
        sample = magnitude[torch.randint(0, n, (m,), generator=self.generator).to(flat.device)]
        rank = min(m, max(1, m - round(k * m / n) + 1))  # the k-th largest of n, scaled to the sample
        threshold = torch.kthvalue(sample.cpu(), rank).values.item()
        return (magnitude >= threshold).nonzero().view(-1) if threshold > 0 else (magnitude > 0).nonzero().view(-1)
