"""Distributed SGD with parameter sharding (Aji & Heafield 2017, Sec. 3 and 4; Dean et
al. 2012): each of N nodes is a client and the server of 1/N of the parameters.

Node ids 0..N-1. The model's parameters form one flat vector (``FlatLayout``) cut into N
shards; node j serves shard j. Each synchronous step:
1. Clients compute the gradient of their mini-batch.
2. Push: client i sends shard j of its gradient to node j through ``push_codec``
   (gradient dropping: Alg. 1, with the residual in client i's codec state).
3. Server j decodes the N pushes, averages them (in sender order, so every transport
   sums alike) and applies the optimizer (AdaGrad in the paper) to its shard.
4. Pull: server j sends its shard to every client — the parameters themselves
   (``pull_mode="params"``) or, as in the paper, the delta from the copy the clients
   last pulled, kept server-side (``"delta"``; one copy, since synchronous clients all
   hold the same one). The delta goes through ``pull_codec``; what it drops stays in
   (parameters - copy) and goes out later, so the pull codec must not keep a residual
   of its own (``graddrop(..., residual=False)``).
5. Clients overwrite (params) or add (delta) the shard in their copy of the model.
With a lossless codec this is Plump-DP with the center agent split N ways.

``schedule="async"``: the paper's setting ("All experiments used asynchronous SGD",
Sec. 5), as Marian implements it (``AsyncGraphGroupDrop``: each push runs its own
optimizer update on each shard, and each device fetches the delta from its own last
fetched copy, through a dropper of its own). Here, within each step:
3'. server j takes the pushes one at a time, in an arrival order drawn from a generator
    seeded by (seed, step) (the same order on every rank, so no rank needs to be told);
    each push is its own optimizer step, with the push itself as the gradient (no
    averaging: N updates per step with the learning rate each);
4'. right after client i's push, server j sends client i the delta between the shard and
    the copy of it that client i holds (one copy and one pull-codec state per client),
    so client i sees every update that arrived before its own.
Clients compute their next gradients on what they pulled: a client's gradient is up to
2(N - 1) updates stale, as when N clients run at the same pace. The exchange stays in
lock-step phases, so every transport (in-process, gloo, NCCL) runs the same schedule
and gives the same numbers; real asynchrony (timing-dependent order) would not be
reproducible. ``schedule="sync"`` (the default) averages the N pushes into one update.

``warmup_steps``: the first steps send pushes and pulls dense (float32) and leave the
codecs' residuals untouched, as Marian does for each device's first 100 pushes and 100
fetches (``PUSH_WARMUP``, ``FETCH_WARMUP`` in ``graph_group_async_drop.h``).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from ..codecs import Codec, CodecState, make_codec
from ..comm import Envelope, Transport
from .agents import set_up_workers
from .phases import PULL, PUSH
from .declared import Declared
from .flat_layout import FlatLayout
from .optimizers import make_optimizer
from .report import StepReport
from ..seed_tree import SeedTree
from .round import Round, local_gradients, ready
from ..validation import int_in, one_of
from .plump_dp import ParameterServerSection
from .server import ServerAgent
from .registry import register_algorithm

SCHEDULES = ("sync", "async")


@dataclass(frozen=True)
class ShardedPSSection(ParameterServerSection):
    """The sharded parameter server of gradient dropping: the server fields plus the two
    settings of Marian's asynchronous implementation (``sharded_ps.py`` says how each works)."""

    schedule: str = "sync"             # sync: one averaged update per step | async: one update per push
    warmup_steps: int = 0              # first steps sent dense (float32) before the codecs apply; Marian: 100

    def __post_init__(self):
        super().__post_init__()
        one_of("schedule", self.schedule, SCHEDULES)
        int_in("warmup_steps", self.warmup_steps, 0, 10**9)


def shard_key(j: int) -> str:
    return f"shard{j}"


class ShardServer(ServerAgent):
    """Node j's server half: shard j of the global model, its optimizer, the client copy."""

    def __init__(self, j: int, params: torch.Tensor, section: ShardedPSSection, nodes: int,
                 push_codec: Codec, pull_codec: Codec, seeds: SeedTree):
        self.j, self.nodes, self.key = j, nodes, shard_key(j)
        super().__init__({self.key: params}, push_codec, pull_codec, range(nodes), seeds, j, role="peer")
        self.shard = self.params[self.key]
        self.optimizer = self.declare("optimizer", make_optimizer(
            section.optimizer, [self.shard], section.lr, section.momentum, section.weight_decay, section.adagrad_eps))
        self.pull_mode = section.pull_mode
        self.copy = self.declare("copy", self.shard.clone() if self.pull_mode == "delta" else None)
        asynchronous = section.schedule == "async"  # one client copy (delta pulls) and one pull state per client
        self.client_states = self.declare("client_states", {i: CodecState(seeds.seed("peer", j, "pull_codec", i))
                                                            for i in range(nodes)} if asynchronous else {})
        self.client_copies = self.declare("client_copies", {i: self.shard.clone() for i in range(nodes)}
                                          if asynchronous and self.pull_mode == "delta" else {})

    def aggregate(self, rnd: Round, pushes: list[Envelope], codec: Codec) -> None:
        """Synchronous step 3: one update with the mean of the pushes."""
        self.shard.grad = self.sum_pushes(rnd, pushes, codec)[self.key].div_(self.nodes)
        self.optimizer.step()

    def serve_in_order(self, rnd: Round, pushes: list[Envelope], order: list[int], push_codec: Codec,
                       pull_codec: Codec) -> None:
        """Asynchronous steps 3' and 4': each push its own update, in ``order``; after each,
        the pull for its client."""
        by_sender = {env.sender: env for env in pushes}
        for i in order:
            if i in by_sender:
                self.shard.grad = self.decode_push(rnd, by_sender[i], push_codec)
                self.optimizer.step()
            self.pull(rnd, pull_codec, [i], self.client_states[i], self.client_copies.get(i))

    def pull(self, rnd: Round, codec: Codec, clients, state: CodecState, copy: torch.Tensor | None) -> None:
        """Step 4: the shard (``params``) or its delta from ``copy``, which then takes what was sent."""
        sent = self.shard if copy is None else self.shard - copy
        message = rnd.send(PULL, self.j, clients, self.key, sent, codec, state)
        if copy is not None:
            with rnd.timed("decode"):
                copy += codec.decode(message, None, self.key, out=self._decoded[self.key])


@register_algorithm("sharded_ps")
class ShardedPS(Declared):
    """N nodes, each a client and the server of one shard; ``step`` does steps 1-5."""

    phases = (PUSH, PULL)
    Section = ShardedPSSection

    def __init__(self, model: nn.Module, transport: Transport, workers: int,
                 section: ShardedPSSection | None = None, seed: int = 0, loss: str = "cross_entropy"):
        section = section or ShardedPSSection()
        self.schedule, self.warmup_steps = section.schedule, section.warmup_steps
        self.dense = ready(make_codec("fp32"))
        pull_mode = section.pull_mode
        self.push_codec, self.pull_codec = ready(make_codec(section.push_codec)), ready(make_codec(section.pull_codec))
        self.transport, self.nodes, self.pull_mode = transport, workers, pull_mode
        seeds = set_up_workers(self, model, transport, workers, seed, loss, role="peer")
        self.layout = FlatLayout({n: p[0] for n, p in self.replicas.params.items()})
        self.bounds = self.layout.shard_bounds(workers)
        for state in self.push_states.values():
            for j, (lo, hi) in enumerate(self.bounds):
                state.set_segments(shard_key(j), self.layout.segments(lo, hi))
        initial = self.layout.flatten({n: p.detach() for n, p in model.named_parameters()})
        self.servers = self.declare("servers", {
            j: ShardServer(j, initial[lo:hi], section, workers, self.push_codec, self.pull_codec, seeds)
            for j, (lo, hi) in enumerate(self.bounds) if transport.is_local(j)})
        for server in self.servers.values():
            for state in [server.pull_state, *server.client_states.values()]:
                state.set_segments(server.key, self.layout.segments(*self.bounds[server.j]))
        self.roles = {i: "peer" for i in range(workers)}  # each node is a client and a shard server
        self._flat = torch.empty(self.layout.numel, device=initial.device)
        self._pulled = torch.empty(self.layout.numel, device=initial.device)

    def step(self, step: int, x: torch.Tensor, y: torch.Tensor) -> StepReport:
        """x, y: the local clients' batches stacked (len(local_workers), B, ...)."""
        rnd = Round(self.transport, step)
        dense = step < self.warmup_steps
        push_codec, pull_codec = (self.dense, self.dense) if dense else (self.push_codec, self.pull_codec)
        losses, correct, grads = local_gradients(self.replicas, x, y)          # 1. gradients
        for li, i in enumerate(self.local_workers):                            # 2. Push shard j to node j
            flat = self.layout.flatten({n: g[li] for n, g in grads.items()}, out=self._flat)
            for j, (lo, hi) in enumerate(self.bounds):
                rnd.send(PUSH, i, [j], shard_key(j), flat[lo:hi], push_codec, self.push_states[i])
        inbox = rnd.exchange(PUSH)
        rnd.as_server()
        order = self.arrival_order(step) if self.schedule == "async" else None
        for j, server in self.servers.items():
            pushes = [env for env in inbox if env.receiver == j]
            if order is not None:                                              # 3'. and 4'. one push at a time
                server.serve_in_order(rnd, pushes, order, push_codec, pull_codec)
                continue
            server.aggregate(rnd, pushes, push_codec)                          # 3. average, update
            server.pull(rnd, pull_codec, range(self.nodes), server.pull_state, server.copy)  # 4. Pull
        self.apply_pulls(rnd, rnd.as_worker().exchange(PULL), pull_codec)   # 5. clients take their pulls
        return rnd.report(losses, correct, y, len(self.local_workers), servers=len(self.servers))

    def arrival_order(self, step: int) -> list[int]:
        """The order in which the servers take this step's pushes (asynchronous schedule):
        a permutation drawn from (run seed, step), the same on every rank."""
        generator = torch.Generator().manual_seed(self.seeds.seed("run", None, "arrival_order", step))
        return torch.randperm(self.nodes, generator=generator).tolist()

    def apply_pulls(self, rnd: Round, inbox: list[Envelope], codec: Codec) -> None:
        """Step 5: each client overwrites (params) or adds (delta) the pulled shards."""
        index = {k: li for li, k in enumerate(self.local_workers)}
        by_client: dict[int, list[Envelope]] = {}
        for env in inbox:
            by_client.setdefault(env.receiver, []).append(env)
        for i, envelopes in by_client.items():
            for env in envelopes:
                lo, hi = self.bounds[int(env.tensor[len("shard"):])]
                rnd.decode(codec, env, self.pull_states(env.receiver, env.sender), out=self._pulled[lo:hi])
            for name, value in self.layout.views(self._pulled).items():
                target = self.replicas.params[name][index[i]]
                target.copy_(value) if self.pull_mode == "params" else target.add_(value)

    @classmethod
    def from_config(cls, model, transport, config, steps_per_epoch: int):
        return cls(model, transport, config.workers, config.section, config.seed, config.loss)

    def global_params(self) -> dict[str, torch.Tensor] | None:
        """The servers' shards assembled (collective: every rank calls it; rank 0 gets it)."""
        shards = {j: s.shard for j, s in self.servers.items()}
        if self.transport.world_size > 1:
            gathered = self.transport.all_gather_object({j: t.cpu() for j, t in shards.items()})
            if self.transport.rank != 0:
                return None
            shards = {j: t for part in gathered for j, t in part.items()}
        return self.layout.views(torch.cat([shards[j].to(self._flat.device) for j in range(self.nodes)]))
