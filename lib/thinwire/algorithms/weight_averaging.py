"""Synchronous weight averaging with compressed transmissions (Oland & Raj 2015, Sec. 2).

Agents: K workers (ids 0..K-1), each with a full copy of the model and its own part of
the data, and one averaging agent (id K; the paper's "master node"). Each step:
1. every worker takes a local mini-batch SGD step: learning rate
   lr * lr_decay^epoch (exponential decay) and light L1 regularization
   (w -= lr * l1 * sign(w) on weight matrices, the sign taken before the step);
2. after every ``exchange_every`` steps (an epoch by default), every worker compresses
   each parameter tensor with ``push_codec`` (Alg. 1; each message self-contained) and
   sends it to the averaging agent;
3. the averaging agent decodes them (Alg. 2), averages them in worker order, compresses
   the average afresh ("it must first adapt the quantization and encoding meta-data")
   with ``pull_codec`` and sends it to every worker;
4. every worker replaces its weights by the decoded average: all K end the exchange
   with the exact same weights, which are the model we evaluate.

At each exchange the step's ``extra`` holds the bit width and entropy estimate the push
codec reports per tensor (mean over workers). An observer (``observe``, ``observers.py``)
adds its own measurements, untimed: Oland & Raj's figure probes live in
``papers/oland_raj/probes.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from ..codecs import Codec, Float32, make_codec
from ..comm import Envelope, Transport
from ..policies import make_policy
from .agents import set_up_workers
from .phases import PULL, PUSH
from .declared import Declared
from .observers import Observer, check_observer, make_observer
from .report import StepReport
from ..seed_tree import SeedTree
from .round import Round, ready
from ..specs import codec_under_policy, policy_spec
from ..validation import float_in, int_in
from .section import Section
from .server import ServerAgent
from .registry import register_algorithm


@dataclass(frozen=True)
class WeightAveragingSection(Section):
    """Oland & Raj's averaging workers: local SGD, compressed exchanges."""

    lr: float = 0.1
    momentum: float = 0.0              # local SGD momentum, per worker
    weight_decay: float = 0.0          # local L2 weight decay, per worker
    lr_decay: float = 1.0              # lr * lr_decay ** epoch
    l1: float = 0.0                    # L1 regularization strength on weight matrices
    exchange_every: int = 0            # steps between weight exchanges; 0 = once per epoch
    observe: str = ""                  # an observer spec (observers.py): measurements for a paper's figures
    push_policy: str = "always"        # what each worker sends: always | entropy_bits(c=.., m=.., f=.., ceiling=..) | ...
    pull_policy: str = "always"        # how the averaging agent decides on its re-compressed average

    def __post_init__(self):
        super().__post_init__()
        for name in ("push_policy", "pull_policy"):
            object.__setattr__(self, name, policy_spec(name, getattr(self, name)))
        for side in ("push", "pull"):
            codec_under_policy(f"{side}_codec", getattr(self, f"{side}_codec"), f"{side}_policy",
                               getattr(self, f"{side}_policy"))
        float_in("lr", self.lr, 0.0, 100.0, lo_open=True)
        float_in("momentum", self.momentum, 0.0, 0.999)
        float_in("weight_decay", self.weight_decay, 0.0, 1.0)
        float_in("lr_decay", self.lr_decay, 0.0, 1.0, lo_open=True)
        float_in("l1", self.l1, 0.0, 1.0)
        int_in("exchange_every", self.exchange_every, 0)
        object.__setattr__(self, "observe", check_observer(self.observe))


class AveragingAgent(ServerAgent):
    """Averages the workers' decoded weights and sends the re-compressed average."""

    def __init__(self, model: nn.Module, push_codec: Codec, pull_codec: Codec, workers: int, seeds: SeedTree,
                 pull_policy: str = "always"):
        super().__init__(dict(model.named_parameters()), push_codec, pull_codec, range(workers), seeds, workers)
        self.workers = workers
        self.pull_policy = self.declare("pull_policy", ready(make_policy(pull_policy,
                                                                         seeds.seed("server", workers, "pull_policy"))))

    def average(self, rnd: Round, pushes: list[Envelope]) -> None:
        """Step 3: decode, average in worker order, compress afresh, send to every worker;
        ``params`` holds what the workers will decode."""
        for name, t in self.sum_pushes(rnd, pushes).items():
            message = rnd.send(PULL, self.workers, range(self.workers), name, t.div_(self.workers),
                               self.pull_codec, self.pull_state, self.pull_policy)
            if message is None:
                raise RuntimeError(f"pull_policy={self.pull_policy.spec()!r} decided not to send the average of "
                                   f"{name!r}, but every worker must get it")
            with rnd.timed("decode"):
                self.pull_codec.decode(message, None, name, out=self.params[name])


@register_algorithm("weight_averaging")
class WeightAveraging(Declared):
    """One run of Sec. 2's scheme on a transport; ``step`` does steps 1-4 above."""

    phases = (PUSH, PULL)
    Section = WeightAveragingSection

    def __init__(self, model: nn.Module, transport: Transport, workers: int, lr: float = 0.1,
                 push_codec: Codec | None = None, pull_codec: Codec | None = None, seed: int = 0,
                 exchange_every: int = 1, lr_decay: float = 1.0, l1: float = 0.0, loss: str = "mse",
                 observer: Observer | None = None, push_policy: str = "always", pull_policy: str = "always", momentum: float = 0.0,
                 weight_decay: float = 0.0):
        if exchange_every < 1:
            raise ValueError(f"exchange_every={exchange_every!r} is not allowed: it must be an int >= 1")
        self.transport, self.workers, self.center_id = transport, workers, workers
        self.lr, self.lr_decay, self.l1, self.exchange_every = lr, lr_decay, l1, exchange_every
        self.momentum, self.weight_decay = momentum, weight_decay
        self.push_codec = ready(push_codec or Float32())
        self.pull_codec = ready(pull_codec or Float32())
        self.observer = observer
        seeds = set_up_workers(self, model, transport, workers, seed, loss)
        self.push_policies = self.declare("push_policies", {
            k: ready(make_policy(push_policy, seeds.seed("worker", k, "push_policy"))) for k in self.local_workers})
        self.center = self.declare("center", AveragingAgent(model, self.push_codec, self.pull_codec, workers, seeds,
                                                            pull_policy)
                                   if transport.is_local(self.center_id) else None)
        self.matrices = [n for n, p in self.replicas.params.items() if p.dim() > 2]  # (K, out, in): weights
        self._sign = {n: torch.empty_like(self.replicas.params[n]) for n in self.matrices}
        self.roles = {**{k: "worker" for k in range(workers)}, self.center_id: "server"}

    @classmethod
    def from_config(cls, model, transport, config, steps_per_epoch: int):
        section = config.section
        return cls(model, transport, config.workers, lr=section.lr, push_codec=make_codec(section.push_codec),
                   pull_codec=make_codec(section.pull_codec), seed=config.seed,
                   exchange_every=section.exchange_every or steps_per_epoch, lr_decay=section.lr_decay,
                   l1=section.l1, loss=config.loss, observer=make_observer(section.observe),
                   push_policy=section.push_policy, pull_policy=section.pull_policy, momentum=section.momentum,
                   weight_decay=section.weight_decay)

    def learning_rate(self, step: int) -> float:
        return self.lr * self.lr_decay ** (step // self.exchange_every)

    def step(self, step: int, x: torch.Tensor, y: torch.Tensor) -> StepReport:
        rnd = Round(self.transport, step)
        losses, correct = self.local_step(x, y, self.learning_rate(step))      # 1. local SGD step, L1
        if (step + 1) % self.exchange_every:
            return rnd.report(losses, correct, y, len(self.local_workers))
        sent = {}
        if self.observer is not None and self.local_workers:
            with rnd.untimed():                                                 # the figures' measurements
                self.observer.exchange(self, x, y)
        for i, k in enumerate(self.local_workers):                              # 2. compress, push (Alg. 1)
            for name, p in self.replicas.params.items():
                self.push(rnd, k, name, p[i], sent)
        inbox = rnd.exchange(PUSH)
        if self.center is not None:
            self.center.average(rnd.as_server(), inbox)                         # 3. average, compress afresh, pull
        self.replace(rnd, rnd.as_worker().exchange(PULL))                     # 4. every worker takes the average
        return rnd.report(losses, correct, y, len(self.local_workers), extra=self.summarize(sent))

    def local_step(self, x: torch.Tensor, y: torch.Tensor, lr: float):
        """Step 1 for every local worker: w -= lr * (grad + momentum, decay) + lr * l1 * sign(w)."""
        if not self.local_workers:
            return torch.zeros(0), torch.zeros(0)
        if self.l1:
            for name in self.matrices:
                torch.sign(self.replicas.params[name], out=self._sign[name])
        losses, correct = self.replicas.sgd_step(x, y, lr, self.momentum, self.weight_decay)
        if self.l1:
            for name in self.matrices:
                self.replicas.params[name].sub_(self._sign[name], alpha=lr * self.l1)
        return losses, correct

    def push(self, rnd: Round, k: int, name: str, w: torch.Tensor, sent: dict) -> None:
        """Step 2 for one tensor of worker k; the observer sees the decision first."""
        decision = rnd.decide(self.push_policies[k], name, w)
        if decision.send and self.observer is not None:
            with rnd.untimed():
                self.observer.before_push(self, k, name, w, decision, self.push_states[k])
        if rnd.send(PUSH, k, [self.center_id], name, w, self.push_codec, self.push_states[k],
                    self.push_policies[k], decision) is not None:
            stats = self.push_states[k].last
            for field, value in (("bits", stats.bits), ("entropy", stats.entropy)):
                if value is not None:
                    sent.setdefault(f"{field}/{name}", []).append(value)

    def summarize(self, sent: dict) -> dict:
        """Per exchange: bit widths and entropies (means over workers), then the observer's."""
        out = {"parameters": sum(p[0].numel() for p in self.replicas.params.values())} if self.local_workers else {}
        out.update({key: float(np.mean(value)) for key, value in sent.items()})
        if self.observer is not None:
            out.update(self.observer.collect())
        return out

    def replace(self, rnd: Round, inbox: list[Envelope]) -> None:
        """Step 4: the decoded average replaces each local worker's weights."""
        index = {k: i for i, k in enumerate(self.local_workers)}
        decoded = {}  # in one process the K workers receive the same message object
        for env in inbox:
            target = self.replicas.params[env.tensor][index[env.receiver]]
            if id(env.message) not in decoded:
                decoded[id(env.message)] = rnd.decode(self.pull_codec, env, self.pull_states(env.receiver, env.sender),
                                                      like=target)
            target.copy_(decoded[id(env.message)])

    def global_params(self) -> dict[str, torch.Tensor] | None:
        """The averaged weights every worker holds after the last exchange."""
        return None if self.center is None else self.center.params
