"""EventGraD's event trigger (Ghosh et al. 2021, Sec. 4, Eq. 3-6 and Sec. 7), as a policy:
send a parameter tensor only when its norm has moved far enough since it was last sent.

For tensor i of one peer, at iteration t (1-based: ``round + 1``):
1. norm_t = ||theta_i||, moved = |norm_t - norm at the last send| (Eq. 3-4);
2. the event test: send when moved >= threshold_i, or t <= ``forced``;
3. on an event, slope = moved / (t - iteration of the last send) enters a history of the
   last ``history`` slopes (h = 2 in the official code), and the threshold is renewed
   from their mean (Eq. 6 with the history of Sec. 7);
4. with ``topk`` > 0 (the Top-K variant, Sec. 7, Table 2) the decision names the
   ceil(topk * numel) entries with the largest |theta - theta_last_sent| as keys: a keyed
   codec (``topk``) sends their values (not deltas) with their indices, and only those
   entries of the sender's last-sent copy change.

Two threshold rules (``rule``):
- ``"paper"`` (default): threshold = horizon * mean of the history, fixed until the next
  event (Sec. 4: "This threshold will be kept fixed until the next event is triggered");
- ``"code"``: the official code (soumyadipghosh/eventgrad, ``dmnist/event/event.cpp``,
  ``dcifar10/spevent/spevent.cpp``) sets threshold = mean of the history at an event and
  multiplies it by horizon before every test, so between events it decays geometrically
  (horizon < 1), the shape of the paper's Corollary 2. The two agree only at horizon = 1.

Decisions this module makes where the paper and the code are silent or differ:
- **Forced iterations** (``forced``, default 29): the code increments its pass counter
  before testing ``pass < 30``, so iterations 1-29 always send. Forced sends are events
  like any other: they enter the slope history and renew the threshold (as in the code).
- **How the threshold starts.** Before the first send the last-sent norm is 0 and the
  history holds zeros (as in the code), so the first slope is the tensor's whole norm and
  the first threshold about norm / h. With ``forced`` > ``history`` that slope has left
  the history before the first real test, which then faces the mean of the last h
  per-iteration slopes of the forced sends. With ``forced`` <= ``history`` the first tests
  face about norm / h, and a tensor is then rarely sent again; the option is kept for the
  ablation, not hidden.
- **A norm that has not moved sends nothing.** The code's test ``moved >= threshold``
  fires on a zero move once the threshold has decayed to 0; here an event needs moved > 0
  as well (a tensor whose norm is unchanged has nothing new to say). The two differ only
  when a norm is bit-for-bit unchanged; horizon = 0 then sends every tensor whose norm
  moved, which in training is every tensor at every iteration (D-PSGD, tested).
- **A heartbeat** (``max_gap``, off by default, not in the paper): a tensor unsent for
  ``max_gap`` iterations is sent. Under the paper's rule a threshold stays fixed until the
  next event, so a tensor whose norm settles within its threshold (a bias on a plateau) is
  never sent again while its values may still move; the EventGraD notebook tests what that
  costs.
- **The last-sent copy starts** as the first tensor this policy sees: every peer starts
  from the same initial model, which the receivers' copies hold too (the code gives its
  copies their own random initialisations, a quirk).
- **Which norm an event records** (``norm_of``, Top-K only). The code (``spevent.cpp``)
  records the whole tensor's norm at an event (``"tensor"``, the default), though the
  receivers got only the k largest entries of the change: the next test then measures the
  move from a norm no receiver holds, and a tensor counts as delivered while most of its
  change is missing. ``"copy"`` records the norm of the receivers' copy after the event
  (the last-sent copy with the sent entries written in), so the trigger keeps firing until
  the copy catches up. The EventGraD notebook tests it as a cause of Top-K's gap.
"""

from __future__ import annotations

import math

import torch

from .base import Decision, Policy
from .registry import register

RULES = ("paper", "code")
NORMS_OF = ("tensor", "copy")


def check_event_trigger(horizon, history, rule, forced, topk) -> None:
    """``ValueError`` naming a bad horizon, history length, rule, forced count or top-k fraction."""
    if not isinstance(horizon, (int, float)) or isinstance(horizon, bool) or not 0 <= horizon < math.inf:
        raise ValueError(f"horizon={horizon!r} is not allowed: horizon must be a finite number >= 0")
    if not isinstance(history, int) or isinstance(history, bool) or history < 1:
        raise ValueError(f"history={history!r} is not allowed: history must be an int >= 1 (slopes kept)")
    if rule not in RULES:
        raise ValueError(f"rule={rule!r} is not allowed: rule must be one of {list(RULES)}")
    if not isinstance(forced, int) or isinstance(forced, bool) or forced < 0:
        raise ValueError(f"forced={forced!r} is not allowed: forced must be an int >= 0 (iterations that always send)")
    if not isinstance(topk, (int, float)) or isinstance(topk, bool) or not 0 <= topk <= 1:
        raise ValueError(f"topk={topk!r} is not allowed: topk must be a fraction in [0, 1] (0: whole tensors)")


@register
class EventTrigger(Policy):
    """``event(horizon=1.0, history=2, rule='paper', forced=29, topk=0.0, max_gap=0, norm_of='tensor')``; see
    the module docstring.

    Per tensor it keeps [last-sent norm, last-sent iteration, threshold, slopes...] and,
    with ``topk``, the last-sent copy; ``trace[key]`` holds the (norm, threshold) of the
    latest test, for the figures (not checkpointed: it is rewritten at every test).
    """

    name = "event"

    def __init__(self, horizon: float = 1.0, history: int = 2, rule: str = "paper", forced: int = 29,
                 topk: float = 0.0, max_gap: int = 0, norm_of: str = "tensor", seed: int = 0):
        check_event_trigger(horizon, history, rule, forced, topk)
        if not isinstance(max_gap, int) or isinstance(max_gap, bool) or max_gap < 0:
            raise ValueError(f"max_gap={max_gap!r} is not allowed: max_gap must be an int >= 0 (0: no heartbeat)")
        if norm_of not in NORMS_OF:
            raise ValueError(f"norm_of={norm_of!r} is not allowed: norm_of must be one of {list(NORMS_OF)}")
        if norm_of == "copy" and not topk:
            raise ValueError(f"norm_of={norm_of!r} is not allowed with topk=0: whole tensors make the copy the tensor")
        self.norm_of = norm_of
        super().__init__(seed)
        self.horizon, self.history, self.rule = float(horizon), history, rule
        self.forced, self.topk, self.max_gap = forced, float(topk), max_gap
        self.trace: dict[str, tuple[float, float]] = {}
        self._pending: dict[str, float] = {}

    def params(self) -> dict:
        heartbeat = {"max_gap": self.max_gap} if self.max_gap else {}  # not in the paper: in the spec only when set
        norm_of = {"norm_of": self.norm_of} if self.norm_of != "tensor" else {}  # likewise
        return {"horizon": self.horizon, "history": self.history, "rule": self.rule, "forced": self.forced,
                "topk": self.topk, **heartbeat, **norm_of}

    def _row(self, key: str) -> torch.Tensor:
        row = self.memory.get(f"{key}/state")
        if row is None:  # last-sent norm 0, iteration 0, threshold 0, a history of zeros (as in the code)
            row = self.memory[f"{key}/state"] = torch.zeros(3 + self.history, dtype=torch.float64)
        return row

    def decide(self, round, key, tensor) -> Decision:
        row = self._row(key)
        t = round + 1                                                       # the code's pass counter
        norm = float(torch.linalg.vector_norm(tensor.detach().double()))
        moved = abs(norm - float(row[0]))                                   # 1. the norm's move
        if self.rule == "code":
            row[2] *= self.horizon                                          #    (the code: decay before the test)
        threshold = float(row[2])
        self.trace[key] = (norm, threshold)
        send = t <= self.forced or (moved > 0.0 and moved >= threshold)     # 2. the event test
        if self.max_gap and t - float(row[1]) >= self.max_gap:              #    (a heartbeat, not the paper's)
            send = True
        if not send:
            return Decision(send=False)
        self._pending[key] = norm
        if not self.topk:
            return Decision()
        flat = tensor.detach().reshape(-1)                                  # 4. Top-K of |theta - theta_last_sent|
        last = self.memory.get(f"{key}/sent")
        if last is None:
            last = self.memory[f"{key}/sent"] = flat.clone()
        k = min(flat.numel(), max(1, math.ceil(self.topk * flat.numel())))
        keys = torch.topk((flat - last).abs(), k, sorted=False).indices.sort().values
        return Decision(keys=keys)

    def sent(self, round, key, tensor, decision: Decision | None = None) -> None:
        """3. The event happened: a new slope, a new threshold, the new last-sent norm (and
        the sent entries of the last-sent copy)."""
        row, t = self._row(key), round + 1
        norm = self._pending.pop(key, float(torch.linalg.vector_norm(tensor.detach().double())))
        slope = abs(norm - float(row[0])) / (t - float(row[1]))
        slopes = row[3:]
        slopes[:-1] = slopes[1:].clone()
        slopes[-1] = slope
        mean = float(slopes.mean())
        row[2] = self.horizon * mean if self.rule == "paper" else mean
        if decision is not None and decision.keys is not None:
            last = self.memory[f"{key}/sent"].view(-1)
            last[decision.keys] = tensor.detach().reshape(-1)[decision.keys]
            if self.norm_of == "copy":                                      #    (what the receivers hold)
                norm = float(torch.linalg.vector_norm(last.double()))
        row[0], row[1] = norm, t
