"""An example method, added as a package of its own: signSGD with majority vote (Bernstein
et al. 2019, "signSGD with majority vote is communication efficient and fault tolerant",
Alg. 1). Nothing outside this folder changes for it: the codec and the algorithm register
themselves when the module is imported (``python -m thinwire --import majority_vote ...``).

Each step (Alg. 1):
1. every worker computes its mini-batch gradient g_k;
2. pushes sign(g_k), one bit per value (the ``signs`` codec);
3. the server sums the workers' signs and takes the majority, sign(sum_k sign(g_k));
4. pulls the vote back to every worker, one bit per value again;
5. every worker steps w <- w - lr * vote.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from thinwire.algorithms import Declared, Round, Section, ServerAgent, StepReport, local_gradients, ready
from thinwire.algorithms import register_algorithm
from thinwire.codecs import Codec, CodecState, Payload, StateBook, make_codec, register
from thinwire.engine import expect_part
from thinwire.models import Replicas
from thinwire.seed_tree import SeedTree


@register
class Signs(Codec):
    """sign(x), one bit per value (a zero sends +1); decodes to +-1."""

    name, codec_id, host_only = "signs", 201, False

    def compress(self, flat, state, key, shape=()):
        bits = torch.cat([flat >= 0, torch.zeros(-flat.numel() % 8, dtype=torch.bool, device=flat.device)])
        weights = 1 << torch.arange(8, dtype=torch.uint8, device=flat.device)
        return Payload(parts={"signs": (bits.view(-1, 8).to(torch.uint8) * weights).sum(1, dtype=torch.uint8)})

    def decompress(self, payload, numel, state, key, out=None, shape=()):
        packed = expect_part(payload, "signs", torch.uint8, (numel + 7) // 8)
        bits = (packed.unsqueeze(1) >> torch.arange(8, dtype=torch.uint8, device=packed.device)) & 1
        values = bits.view(-1)[:numel].to(torch.float32) * 2 - 1
        return values if out is None else out.copy_(values)


@dataclass(frozen=True)
class MajorityVoteSection(Section):
    lr: float = 0.001
    push_codec: str = "signs"
    pull_codec: str = "signs"

    def __post_init__(self):
        super().__post_init__()
        if not 0.0 < self.lr <= 1.0:
            raise ValueError(f"lr={self.lr!r} is not allowed: lr must be in (0, 1]")


class Voter(ServerAgent):
    """The server: it keeps no model, only the sum of the signs (step 3)."""

    def vote(self, rnd: Round, pushes) -> None:
        for name, total in self.sum_pushes(rnd, pushes).items():
            rnd.send("pull", self.workers, range(self.workers), name, torch.sign(total), self.pull_codec,
                     self.pull_state)


@register_algorithm("majority_vote")
class MajorityVote(Declared):
    phases = ("push", "pull")
    Section = MajorityVoteSection

    def __init__(self, model, transport, workers: int, section: MajorityVoteSection, seed: int = 0):
        self.transport, self.workers, self.lr = transport, workers, section.lr
        self.push_codec, self.pull_codec = ready(make_codec(section.push_codec)), ready(make_codec(section.pull_codec))
        self.local_workers = [k for k in range(workers) if transport.is_local(k)]
        seeds = SeedTree(seed)
        self.replicas = self.declare("replicas", Replicas(model, max(1, len(self.local_workers))))
        self.push_states = self.declare("push", {k: CodecState(seeds.seed("worker", k, "push_codec"))
                                                 for k in self.local_workers})
        self.pull_states = self.declare("pull", StateBook(seeds.pairs("worker", "pull_receive")))
        self.server = None
        if transport.is_local(workers):
            self.server = self.declare("server", Voter(dict(model.named_parameters()), self.push_codec,
                                                       self.pull_codec, range(workers), seeds, workers))
            self.server.workers = workers
        self.roles = {**{k: "worker" for k in range(workers)}, workers: "server"}

    @classmethod
    def from_config(cls, model, transport, config, steps_per_epoch: int):
        return cls(model, transport, config.workers, config.section, config.seed)

    def step(self, step: int, x: torch.Tensor, y: torch.Tensor) -> StepReport:
        rnd = Round(self.transport, step)
        losses, correct, grads = local_gradients(self.replicas, x, y)                # 1.
        for i, k in enumerate(self.local_workers):                                   # 2.
            for name, g in grads.items():
                rnd.send("push", k, [self.workers], name, g[i], self.push_codec, self.push_states[k])
        inbox = rnd.exchange("push")
        if self.server is not None:                                                  # 3., 4.
            self.server.vote(rnd.as_server(), inbox)
        index = {k: i for i, k in enumerate(self.local_workers)}
        for env in rnd.as_worker().exchange("pull"):                                 # 5.
            target = self.replicas.params[env.tensor][index[env.receiver]]
            vote = rnd.decode(self.pull_codec, env, self.pull_states(env.receiver, env.sender), like=target)
            target.sub_(self.lr * vote)
        return rnd.report(losses, correct, y, len(self.local_workers))

    def global_params(self):
        return {name: p[0] for name, p in self.replicas.params.items()} if self.local_workers else None
