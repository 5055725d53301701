"""The motion of the peers' mean model, split into what the averaging and what the gradient
steps moved it by (a measurement for decentralized runs, not part of any method).

On a ring with a doubly stochastic W (Ghosh et al. 2021, Eq. 5; Lian et al. 2017) the
averaging leaves the mean of the peers' parameters where it was, so the mean model moves
exactly by the summed gradient steps: x̄_{k+1} = x̄_k - lr mean_j v_j. When a peer averages
with *copies* of its neighbours that lag them (a tensor not sent, or sent only in part, as
EventGraD and its Top-K variant do), the averaging moves the mean too:
x̄_{k+1} = x̄_k - (2/3) ē_k - lr mean_j v_j, with e_j = θ_j minus its neighbours' copy of
it, the part of θ_j not yet delivered. That lag points back along the recent steps, so the
averaging pulls the mean model back toward where the copies were.

``MeanMotion`` sums both parts over a run (A = the averaging's moves, G = the gradient
steps' moves, one vector each) and reports ``share`` = <A + G, G> / <G, G>: the fraction of
its summed gradient steps that the mean model actually travelled along them. D-PSGD gives 1
(up to float rounding); a share s < 1 means the mean model moved as if its step were s x lr.
It needs every peer's parameters, so it measures only when one process holds all peers;
elsewhere it is ``None``.
"""

from __future__ import annotations

import torch


class MeanMotion:
    """Running sums of the mean model's moves by part; ``mark`` then ``add(part)``."""

    PARTS = ("averaging", "gradient")

    def __init__(self, replicas):
        self.replicas = replicas    # .params: name -> (K, ...), every peer's parameters stacked
        params = replicas.params
        size = sum(p[0].numel() for p in params.values())
        device = next(iter(params.values())).device
        self.sums = {part: torch.zeros(size, dtype=torch.float64, device=device) for part in self.PARTS}
        self._last: torch.Tensor | None = None

    def mean(self) -> torch.Tensor:
        """The mean model's parameters, flattened in parameter order (summed in float64)."""
        return torch.cat([p.detach().mean(0).reshape(-1) for p in self.replicas.params.values()]).double()

    def mark(self) -> None:
        """Remember where the mean model is now (kept from the last ``add`` when nothing moved
        the parameters since: the mean computed once serves as the next step's start)."""
        if self._last is None:
            self._last = self.mean()

    def add(self, part: str) -> None:
        """Add the mean model's move since the last ``mark`` or ``add`` to ``part``'s sum."""
        now = self.mean()
        self.sums[part] += now - self._last
        self._last = now

    def share(self) -> float:
        """<A + G, G> / <G, G> over the run so far (1.0 before any step)."""
        a, g = self.sums["averaging"], self.sums["gradient"]
        gg = float(g @ g)
        return 1.0 + float(a @ g) / gg if gg > 0 else 1.0

    def state_dict(self) -> dict:
        return {part: s.clone() for part, s in self.sums.items()}

    def load_state_dict(self, state: dict) -> None:
        for part in self.PARTS:
            self.sums[part].copy_(state[part])
        self._last = None                       # the parameters were restored too: measure afresh
