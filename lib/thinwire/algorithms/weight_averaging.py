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

Measurements at each exchange, for the paper's figures, go in the step's ``extra``:
the bit width and entropy estimate per tensor (mean over workers), the RMS of each
tensor's loss gradient on the last batch (Fig. 2), and the payload bytes the pushes would take
with the other coders (``probe_coders``: the same quantization, encoded for real with
raw packing or ANS; Fig. 5 and the ANS comparison). ``probe_entropy`` adds the
entropy estimate of worker 0's weights for a grid of (M, F) (Fig. 3).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from ..codecs import Codec, CodecState, Float32, StateBook, make_codec, wire
from ..codecs.quantize.binquant import BinQuantize
from ..codecs.quantize.bin_quantize import estimate_entropy
from ..codecs.quantize.minmax import value_range
from ..comm import Envelope, Transport
from ..models import Replicas
from ..policies import make_policy
from .declared import Declared
from .report import StepReport
from ..seed_tree import SeedTree
from .round import Round, ready, worker_seeds
from .sections import WeightAveragingSection
from .server import ServerAgent

PROBE_M = (2, 4, 6, 8)
PROBE_F = (0.01, 0.03, 0.1, 1.0)


def _with_coder(codec: Codec, coder: str) -> Codec:
    return ready(type(codec)(**{**codec.params(), "coder": coder}))


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
            message = rnd.send("pull", self.workers, range(self.workers), name, t.div_(self.workers),
                               self.pull_codec, self.pull_state, self.pull_policy)
            if message is None:
                raise RuntimeError(f"pull_policy={self.pull_policy.spec()!r} decided not to send the average of "
                                   f"{name!r}, but every worker must get it")
            with rnd.timed("decode"):
                self.pull_codec.decode(message, None, name, out=self.params[name])


class WeightAveraging(Declared):
    """One run of Sec. 2's scheme on a transport; ``step`` does steps 1-4 above."""

    phases = ("push", "pull")
    Section = WeightAveragingSection

    def __init__(self, model: nn.Module, transport: Transport, workers: int, lr: float = 0.1,
                 push_codec: Codec | None = None, pull_codec: Codec | None = None, seed: int = 0,
                 exchange_every: int = 1, lr_decay: float = 1.0, l1: float = 0.0, loss: str = "mse",
                 probe_coders: tuple[str, ...] = ("raw", "huffman", "ans"), probe_entropy: bool = False,
                 push_policy: str = "always", pull_policy: str = "always", momentum: float = 0.0,
                 weight_decay: float = 0.0):
        if exchange_every < 1:
            raise ValueError(f"exchange_every={exchange_every!r} is not allowed: it must be an int >= 1")
        self.transport, self.workers, self.center_id = transport, workers, workers
        self.lr, self.lr_decay, self.l1, self.exchange_every = lr, lr_decay, l1, exchange_every
        self.momentum, self.weight_decay = momentum, weight_decay
        self.push_codec = ready(push_codec or Float32())
        self.pull_codec = ready(pull_codec or Float32())
        self.probes = ({c: _with_coder(self.push_codec, c) for c in probe_coders}
                       if isinstance(self.push_codec, BinQuantize) else {})
        self.probe_entropy = probe_entropy
        self.local_workers = [k for k in range(workers) if transport.is_local(k)]
        self.seeds = seeds = SeedTree(seed)
        self.replicas = self.declare("replicas", Replicas(
            model, max(1, len(self.local_workers)), loss=loss, seeds=worker_seeds(seeds, self.local_workers, "dropout"),
            per_replica=True))  # quantized weights: the same bits as one rank's replica
        self.push_states = self.declare("push_states", {k: CodecState(seeds.seed("worker", k, "push_codec"))
                                                        for k in self.local_workers})
        self.push_policies = self.declare("push_policies", {
            k: ready(make_policy(push_policy, seeds.seed("worker", k, "push_policy"))) for k in self.local_workers})
        self.pull_states = self.declare("pull_states", StateBook(seeds.pairs("worker", "pull_receive")))
        self.probe_state = CodecState(seeds.seed("worker", None, "probe_coders"))  # loaded from a push state each use
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
                   l1=section.l1, loss=config.loss, probe_entropy=section.probe_entropy,
                   push_policy=section.push_policy, pull_policy=section.pull_policy, momentum=section.momentum,
                   weight_decay=section.weight_decay)

    def learning_rate(self, step: int) -> float:
        return self.lr * self.lr_decay ** (step // self.exchange_every)

    def step(self, step: int, x: torch.Tensor, y: torch.Tensor) -> StepReport:
        rnd = Round(self.transport, step)
        losses, correct = self.local_step(x, y, self.learning_rate(step))      # 1. local SGD step, L1
        if (step + 1) % self.exchange_every:
            return rnd.report(losses, correct, y, len(self.local_workers))
        extra, probes = {}, {}
        if self.local_workers:
            with rnd.untimed():                                                 # the figures' measurements
                extra = self.measure(x, y)
        for i, k in enumerate(self.local_workers):                              # 2. compress, push (Alg. 1)
            for name, p in self.replicas.params.items():
                self.push(rnd, k, name, p[i], probes)
        inbox = rnd.exchange("push")
        if self.center is not None:
            self.center.average(rnd.as_server(), inbox)                         # 3. average, compress afresh, pull
        self.replace(rnd, rnd.as_worker().exchange("pull"))                     # 4. every worker takes the average
        return rnd.report(losses, correct, y, len(self.local_workers), extra={**extra, **self.summarize(probes)})

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

    def push(self, rnd: Round, k: int, name: str, w: torch.Tensor, probes: dict) -> None:
        """Step 2 for one tensor of worker k; the probe coders encode the same decision from
        the same generator state first (their bytes are measurements, not traffic)."""
        decision = rnd.decide(self.push_policies[k], name, w)
        if decision.send and self.probes:
            with rnd.untimed():
                for coder, codec in self.probes.items():
                    self.probe_state.load_state_dict(self.push_states[k].state_dict())
                    size = wire.measure(codec.encode(w, self.probe_state, name, decision))[0]
                    probes[f"probe_payload/{coder}"] = probes.get(f"probe_payload/{coder}", 0) + size
        if rnd.send("push", k, [self.center_id], name, w, self.push_codec, self.push_states[k],
                    self.push_policies[k], decision) is not None:
            stats = self.push_states[k].last
            for field, value in (("bits", stats.bits), ("entropy", stats.entropy)):
                if value is not None:
                    probes.setdefault(f"{field}/{name}", []).append(value)

    def summarize(self, probes: dict) -> dict:
        """Per exchange: probe payloads per worker, bit widths and entropies (means over workers)."""
        workers = max(1, len(self.local_workers))
        out = {"parameters": sum(p[0].numel() for p in self.replicas.params.values())} if self.local_workers else {}
        out.update({f"probe_payload/{c}": 0 for c in self.probes} if self.local_workers else {})
        for key, value in probes.items():
            out[key] = value / workers if key.startswith("probe_payload/") else float(np.mean(value))
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

    def measure(self, x, y) -> dict:
        """Gradient RMS per tensor (Fig. 2) and, when asked, worker 0's entropy grid (Fig. 3)."""
        out = self._gradient_rms(x, y)
        if self.probe_entropy and 0 in self.local_workers:
            out.update(self._entropy_grid())
        return out

    def _gradient_rms(self, x, y) -> dict:
        """RMS of each tensor's loss gradient on the last batch, mean over local workers (Fig. 2)."""
        _, _, grads = self.replicas.loss_and_grads(x, y)
        return {f"grad_rms/{n}": float(g.reshape(g.shape[0], -1).square().mean(1).sqrt().mean())
                for n, g in grads.items()}

    def _entropy_grid(self) -> dict:
        """Worker 0's entropy estimate per weight matrix for each (M, F) of the grid (Fig. 3)."""
        out = {}
        gen = torch.Generator().manual_seed(12345)
        for name in self.matrices:
            w = self.replicas.params[name][self.local_workers.index(0)].reshape(-1).cpu()  # numba kernels: host
            lo, hi = value_range(w, name)
            for m in PROBE_M:
                for f in PROBE_F:
                    out[f"entropy_m{m}_f{f}/{name}"] = estimate_entropy(w, lo, hi, m, f, gen)
        return out

    def global_params(self) -> dict[str, torch.Tensor] | None:
        """The averaged weights every worker holds after the last exchange."""
        return None if self.center is None else self.center.params
