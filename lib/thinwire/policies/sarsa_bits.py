"""MQGrad's agent (Cui et al. 2018, Sec. 3.2, Alg. 2): SARSA learns the gradient bit width.

Every ``window`` = T iterations (time step t = m / T) the server's agent:
1. s_t = T(s_{t-1}, a_{t-1}): the state is [n_t, L̄_t], the bit width n_t and the T global
   losses of the window (iterations m-T+1..m) smoothed by Eq. 1,
   L̄^i = alpha L^i + (1 - alpha) L̄^{i-1}, continuing from the last window's L̄^T
   (``smoothing`` = alpha). n_t follows the greedy action at s_{t-1} (Eq. 3,
   ``transition="greedy"``), or the action taken (``"taken"``, an ablation);
2. r_{t-1} = R(s_{t-1}, a_{t-1}) = -beta * gamma / c (Eq. 2): beta the least-squares slope
   of L̄_t over i = 1..T, gamma = ``reward_scale`` (300), c the time of the window's T
   iterations (m-T..m-1, sent at the previous decision's bits) in milliseconds;
3. a_t from s_t, epsilon-greedy over {keep, +1 bit} (only keep at ``high``);
4. v <- v + step [r_{t-1} + discount Q(s_t, a_t) - Q(s_{t-1}, a_{t-1})] dQ/dv|_{t-1};
5. returns the bit width n_t + a_t, broadcast for the next T iterations.
Q(s, a) is a small network of the T smoothed losses with one output per bit level in
``low..high`` (7 for 2..8); Q(s, a) is the output of level n + a, so SARSA's target uses Q of
the level actually sent.

The paper's text is the default: 10 ReLU hidden units, step 0.1, alpha 0.01, epsilon 0.1.
It gives no discount (one symbol serves for the discount and the reward scale 300): 0.9,
the official code's, is the default. It gives no initialisation: torch's default for a
linear layer, U(-1/sqrt(fan_in), 1/sqrt(fan_in)), drawn from this policy's generator.
Where the official code (``server/sarsa.cc``, ``synchronous_server_using_sarsa.cc``,
``reward.cc``, ``reinforcement_learning_model/sarsa_continous.py``) departs, an option:
- ``hidden=30, activation="tanh", init="code"``: truncated normal std 5e-2 (first layer)
  and 5e-5 (output), zero biases;
- ``step=0.05``; ``smoothing=0.1`` (it keeps 0.9 of the old value); ``prior=16.0`` (the
  smoothing starts from 16 instead of the first loss);
- ``time="code"``: c = 5 + 5 * bits milliseconds instead of the window's time;
- ``first="keep"``: the first decision keeps the initial bits (no action drawn);
- ``ties="up"``: Q(s, keep) = Q(s, +1) goes to +1 (the paper keeps on >=);
- ``explore="up"``: only a greedy keep is ever replaced, by +1 (the paper's epsilon-greedy
  takes the other action either way).
The window's time (``time``): ``"modelled"`` (default) is the ``seconds`` the algorithm
reports per iteration (its compute parameter plus the network model's price of that
iteration's messages: deterministic); ``"measured"`` the ``wall`` seconds it reports.

State (checkpointed in ``memory`` and ``modules``): the Q network, the generator, the
window's losses and times, n, the last state, level and smoothed loss, and ``trace``: one
row per decision (iteration, n_t, bits sent, greedy action, explored, reward, Q(s_t, keep),
Q(s_t, +1)).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from ..engine import check_bits
from ..validation import float_in, int_in, one_of
from .base import Decision
from .registry import register
from .controller import Controller

ACTIVATIONS = {"relu": nn.ReLU, "tanh": nn.Tanh}
INITS = ("default", "code")
TIMES = ("modelled", "measured", "code")
TRANSITIONS = ("greedy", "taken")
FIRSTS = ("choose", "keep")
TIES = ("keep", "up")
EXPLORES = ("either", "up")
TRACE = ("iteration", "level", "bits", "greedy", "explored", "reward", "q_keep", "q_up")
CODE_TIME_MS = (5.0, 5.0)  # reward.cc: get_reward_v5(slope, level, 5, 5): 5 ms + 5 ms per bit


def slope(values: torch.Tensor) -> float:
    """beta of the least-squares line beta * i + b through (i, values[i-1]), i = 1..T."""
    n = values.numel()
    i = torch.arange(1, n + 1, dtype=torch.float64)
    di = i - i.mean()
    return float((di * (values.to(torch.float64) - values.to(torch.float64).mean())).sum() / (di * di).sum())


def smoothed(losses: torch.Tensor, previous: float, alpha: float) -> torch.Tensor:
    """Eq. 1: each L̄^i = alpha L^i + (1 - alpha) L̄^{i-1}, from L̄^0 = ``previous``."""
    out = torch.empty_like(losses, dtype=torch.float64)
    last = previous
    for i, loss in enumerate(losses.tolist()):
        last = alpha * loss + (1 - alpha) * last
        out[i] = last
    return out


@register
class SarsaBits(Controller):
    name = "sarsa_bits"

    def __init__(self, window: int = 5, low: int = 2, high: int = 8, initial: int = 2, epsilon: float = 0.1,
                 step: float = 0.1, discount: float = 0.9, smoothing: float = 0.01, hidden: int = 10,
                 activation: str = "relu", init: str = "default", prior: float = 0.0, reward_scale: float = 300.0,
                 time: str = "modelled", first: str = "choose", transition: str = "greedy", ties: str = "keep",
                 explore: str = "either", seed: int = 0):
        super().__init__(window, seed)
        check_bits("low", low)
        check_bits("high", high)
        if not low < high:
            raise ValueError(f"low={low}, high={high} is not allowed: low must be < high")
        int_in("initial", initial, low, high)
        float_in("epsilon", epsilon, 0.0, 1.0)
        float_in("step", step, 0.0, 10.0)
        float_in("discount", discount, 0.0, 1.0)
        float_in("smoothing", smoothing, 0.0, 1.0, lo_open=True)
        int_in("hidden", hidden, 1, 4096)
        one_of("activation", activation, ACTIVATIONS)
        one_of("init", init, INITS)
        float_in("prior", prior, 0.0, 1e6)  # 0: start the smoothing from the first loss
        float_in("reward_scale", reward_scale, 0.0, 1e9, lo_open=True)
        for name, value, allowed in (("time", time, TIMES), ("first", first, FIRSTS),
                                     ("transition", transition, TRANSITIONS), ("ties", ties, TIES),
                                     ("explore", explore, EXPLORES)):
            one_of(name, value, allowed)
        self.low, self.high, self.initial = low, high, initial
        self.epsilon, self.step, self.discount, self.smoothing = float(epsilon), float(step), float(discount), float(smoothing)
        self.hidden, self.activation, self.init, self.prior = hidden, activation, init, float(prior)
        self.reward_scale, self.time, self.first = float(reward_scale), time, first
        self.transition, self.ties, self.explore = transition, ties, explore
        self.q = self._network()
        self.modules["q"] = self.q
        self.memory.update(losses=torch.zeros(0, dtype=torch.float64), seconds=torch.zeros(0, dtype=torch.float64),
                           level=torch.tensor(initial), decisions=torch.tensor(0),
                           trace=torch.zeros(0, len(TRACE), dtype=torch.float64))

    def params(self) -> dict:
        return {"window": self.window, "low": self.low, "high": self.high, "initial": self.initial,
                "epsilon": self.epsilon, "step": self.step, "discount": self.discount, "smoothing": self.smoothing,
                "hidden": self.hidden, "activation": self.activation, "init": self.init, "prior": self.prior,
                "reward_scale": self.reward_scale, "time": self.time, "first": self.first,
                "transition": self.transition, "ties": self.ties, "explore": self.explore}

    def _network(self) -> nn.Sequential:
        levels = self.high - self.low + 1
        net = nn.Sequential(nn.Linear(self.window, self.hidden), ACTIVATIONS[self.activation](),
                            nn.Linear(self.hidden, levels)).to(torch.float64)
        with torch.no_grad():
            for layer, std in ((net[0], 5e-2), (net[2], 5e-5)):
                if self.init == "code":
                    nn.init.trunc_normal_(layer.weight, 0.0, std, -2 * std, 2 * std, generator=self.generator)
                    layer.bias.zero_()
                else:
                    bound = 1 / math.sqrt(layer.in_features)
                    for p in (layer.weight, layer.bias):
                        p.copy_(torch.rand(p.shape, generator=self.generator, dtype=torch.float64) * 2 * bound - bound)
        return net

    # -- what the algorithm reports ----------------------------------------------------
    def observe(self, round: int, signals: dict[str, float]) -> None:
        """``loss``: the global loss of iteration ``round``; ``seconds`` (modelled) and
        ``wall`` (measured): the time of iteration ``round``, told once it is over."""
        if "loss" in signals:
            self.memory["losses"] = torch.cat([self.memory["losses"], torch.tensor([float(signals["loss"])],
                                                                                  dtype=torch.float64)])
        key = {"modelled": "seconds", "measured": "wall"}.get(self.time)
        if key is not None and key in signals:
            self.memory["seconds"] = torch.cat([self.memory["seconds"], torch.tensor([float(signals[key])],
                                                                                    dtype=torch.float64)])

    def warm_up(self) -> None:
        fresh = type(self)(**self.params(), seed=0)
        fresh.observe(0, {"loss": 1.0})
        fresh.decide(0, "warm_up", torch.zeros(0))

    # -- one decision (Alg. 2) ---------------------------------------------------------
    def q_values(self, state: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return self.q(state.to(torch.float64))

    def _greedy(self, q: torch.Tensor, n: int) -> int:
        if n >= self.high:
            return 0
        keep, up = float(q[n - self.low]), float(q[n + 1 - self.low])
        return int(up > keep or (self.ties == "up" and up == keep))

    def _draw(self) -> bool:
        return float(torch.rand((), generator=self.generator, dtype=torch.float64)) < self.epsilon

    def choose(self, round: int) -> Decision:
        m = self.memory
        losses = m["losses"]
        if losses.numel() == 0:
            raise RuntimeError(f"{self.name}: decision at iteration {round} before any loss was observed")
        n = int(m["level"])
        first = int(m["decisions"]) == 0
        if first:  # no window yet: the state holds the one loss there is, T times
            state = losses[-1:].repeat(self.window)
            last_smoothed = self.prior or float(losses[-1])
            reward = math.nan
        else:
            window = losses[-self.window:]
            state = smoothed(window, float(m["last_smoothed"]), self.smoothing)                 # 1.
            last_smoothed = float(state[-1])
            reward = -slope(state) * self.reward_scale / self._window_ms(int(m["last_level"]))  # 2.
        q = self.q_values(state)
        greedy = 0 if first and self.first == "keep" else self._greedy(q, n)
        action, explored = greedy, False                                                         # 3.
        if n < self.high and not (first and self.first == "keep") and self._draw():
            if self.explore == "either" or greedy == 0:
                action, explored = 1 - greedy, True
        if not first:                                                                            # 4.
            self._update(reward, m["last_state"], int(m["last_level"]), float(q[n + action - self.low]))
        bits = n + action                                                                        # 5.
        m["level"] = torch.tensor(n + (greedy if self.transition == "greedy" else action))
        m["last_state"], m["last_level"] = state.clone(), torch.tensor(bits)
        m["last_smoothed"] = torch.tensor(last_smoothed, dtype=torch.float64)
        m["decisions"] = m["decisions"] + 1
        m["losses"], m["seconds"] = losses[-1:].clone(), m["seconds"][:0].clone()
        q_up = float(q[n + 1 - self.low]) if n < self.high else math.nan
        row = torch.tensor([[round, n, bits, greedy, float(explored), reward, float(q[n - self.low]), q_up]],
                           dtype=torch.float64)
        m["trace"] = torch.cat([m["trace"], row])
        return Decision(bits=bits)

    def _window_ms(self, bits: int) -> float:
        if self.time == "code":
            return CODE_TIME_MS[0] + CODE_TIME_MS[1] * bits
        seconds = self.memory["seconds"]
        if seconds.numel() == 0:
            raise RuntimeError(f"{self.name}(time={self.time!r}): no iteration times were observed in the window")
        return 1e3 * float(seconds[-self.window:].sum())

    def _update(self, reward: float, old_state: torch.Tensor, old_level: int, q_next: float) -> None:
        """v <- v + step [r + discount Q(s_t, a_t) - Q(s_{t-1}, a_{t-1})] dQ(s_{t-1}, a_{t-1})/dv,
        ``q_next`` = Q(s_t, a_t) before the step."""
        target = reward + self.discount * q_next
        value = self.q(old_state)[old_level - self.low]
        grads = torch.autograd.grad(value, list(self.q.parameters()))
        delta = target - float(value.detach())
        with torch.no_grad():
            for p, g in zip(self.q.parameters(), grads):
                p.add_(g, alpha=self.step * delta)

    def trace(self) -> dict[str, list[float]]:
        """One list per ``TRACE`` column, one entry per decision so far."""
        rows = self.memory["trace"]
        return {name: rows[:, i].tolist() for i, name in enumerate(TRACE)}
