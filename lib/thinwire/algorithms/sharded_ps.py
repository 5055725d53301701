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

import time

import torch
from torch import nn

from ..codecs import Codec, CodecState, StateBook, make_codec, pair_seed
from ..comm import Envelope, Transport
from ..models import Replicas
from .flat_layout import FlatLayout
from .optimizers import make_optimizer
from .report import StepReport, Tally
from .sections import ShardedPSSection
from .server import ServerAgent


def shard_key(j: int) -> str:
    return f"shard{j}"


class ShardServer(ServerAgent):
    """Node j's server half: shard j of the global model, its optimizer, the client copy."""

    def __init__(self, j: int, params: torch.Tensor, section: ShardedPSSection, nodes: int,
                 push_codec: Codec, pull_codec: Codec, seed: int):
        self.j, self.nodes, self.key = j, nodes, shard_key(j)
        super().__init__({self.key: params}, push_codec, pull_codec, range(nodes),
                         lambda i: seed + 1000 + nodes * j + i, seed + 2000 + j)
        self.shard = self.params[self.key]
        self.optimizer = make_optimizer(section.optimizer, [self.shard], section.lr, section.momentum,
                                        section.weight_decay, section.adagrad_eps)
        self.pull_mode = section.pull_mode
        self.copy = self.shard.clone() if self.pull_mode == "delta" else None
        self.client_states: dict[int, CodecState] = {}     # asynchronous schedule only
        self.client_copies: dict[int, torch.Tensor] = {}   # ... in pull_mode "delta"

    def enable_client_copies(self, seed: int) -> None:
        """Asynchronous schedule: one client copy (delta pulls) and one pull-codec state per client."""
        self.client_states = {i: CodecState(seed + 6000 + self.nodes * self.j + i) for i in range(self.nodes)}
        if self.pull_mode == "delta":
            self.client_copies = {i: self.shard.clone() for i in range(self.nodes)}

    def aggregate(self, pushes: list[Envelope], codec: Codec) -> None:
        """Synchronous: one update with the mean of the pushes."""
        self.shard.grad = self.sum_pushes(pushes, codec)[self.key].div_(self.nodes)
        self.optimizer.step()

    def serve_in_order(self, pushes: list[Envelope], order: list[int], push_codec: Codec, pull_codec: Codec):
        """Asynchronous: each push its own update, in ``order``; after each, the pull for
        its client. Yields (client, pull message, codec state)."""
        by_sender = {env.sender: env for env in pushes}
        for i in order:
            if i in by_sender:
                self.shard.grad = self.decode_push(by_sender[i], push_codec)
                self.optimizer.step()
            state = self.client_states[i]
            yield i, self._pull(pull_codec, state, self.client_copies.get(i)), state

    def pull_message(self, codec: Codec):
        return self._pull(codec, self.pull_state, self.copy)

    def _pull(self, codec: Codec, state: CodecState, copy: torch.Tensor | None):
        """The shard (``params``) or its delta from ``copy``, which then takes what was sent."""
        if copy is None:
            return codec.encode(self.shard, state, self.key)
        message = codec.encode(self.shard - copy, state, self.key)
        copy += codec.decode(message, None, self.key, out=self._decoded[self.key])
        return message

    def extra_state(self) -> dict:
        return {"optimizer": self.optimizer.state_dict(), "copy": None if self.copy is None else self.copy.clone(),
                "client_states": {i: s.state_dict() for i, s in self.client_states.items()},
                "client_copies": {i: c.clone() for i, c in self.client_copies.items()}}

    def load_extra_state(self, state: dict) -> None:
        self.optimizer.load_state_dict(state["optimizer"])
        if self.copy is not None:
            self.copy.copy_(state["copy"])
        for i, s in self.client_states.items():
            s.load_state_dict(state["client_states"][i])
        for i, c in self.client_copies.items():
            c.copy_(state["client_copies"][i])


class ShardedPS:
    """N nodes, each a client and the server of one shard; ``step`` does steps 1-5."""

    phases = ("push", "pull")
    Section = ShardedPSSection

    def __init__(self, model: nn.Module, transport: Transport, workers: int,
                 section: ShardedPSSection | None = None, seed: int = 0, loss: str = "cross_entropy"):
        section = section or ShardedPSSection()
        self.schedule, self.warmup_steps, self.order_seed = section.schedule, section.warmup_steps, seed + 9000
        self.dense = make_codec("fp32")
        pull_mode = section.pull_mode
        self.push_codec, self.pull_codec = make_codec(section.push_codec), make_codec(section.pull_codec)
        if pull_mode == "delta" and self.pull_codec.memory:
            raise ValueError(f"pull_codec={self.pull_codec.spec()!r} keeps a residual of its own, but in "
                             "pull_mode='delta' the delta from the client copy already carries what was not "
                             "sent; use a codec without memory (e.g. graddrop(..., residual=False))")
        self.transport, self.nodes, self.pull_mode = transport, workers, pull_mode
        self.local_workers = [k for k in range(workers) if transport.is_local(k)]
        self.replicas = Replicas(model, max(1, len(self.local_workers)), loss=loss,
                                 seeds=[seed + 7000 + k for k in self.local_workers] or [seed + 7000])
        self.layout = FlatLayout({n: p[0] for n, p in self.replicas.params.items()})
        self.bounds = self.layout.shard_bounds(workers)
        self.push_states = {i: CodecState(seed + 3000 + i) for i in self.local_workers}
        for state in self.push_states.values():
            for j, (lo, hi) in enumerate(self.bounds):
                state.set_segments(shard_key(j), self.layout.segments(lo, hi))
        initial = self.layout.flatten({n: p.detach() for n, p in model.named_parameters()})
        self.servers = {j: ShardServer(j, initial[lo:hi], section, workers, self.push_codec, self.pull_codec, seed)
                        for j, (lo, hi) in enumerate(self.bounds) if transport.is_local(j)}
        for server in self.servers.values():
            if self.schedule == "async":
                server.enable_client_copies(seed)
            states = [server.pull_state, *server.client_states.values()]
            for state in states:
                state.set_segments(server.key, self.layout.segments(*self.bounds[server.j]))
        self.roles = {i: "peer" for i in range(workers)}  # each node is a client and a shard server
        self.pull_states = StateBook(pair_seed(seed + 5000))  # each client's own state for each server's pulls
        self._flat = torch.empty(self.layout.numel, device=initial.device)
        self._pulled = torch.empty(self.layout.numel, device=initial.device)

    def step(self, step: int, x: torch.Tensor, y: torch.Tensor) -> StepReport:
        """x, y: the local clients' batches stacked (len(local_workers), B, ...)."""
        t0 = time.perf_counter()
        outbox, tally = [], Tally()
        dense = step < self.warmup_steps
        push_codec, pull_codec = (self.dense, self.dense) if dense else (self.push_codec, self.pull_codec)
        if self.local_workers:
            losses, correct, grads = self.replicas.loss_and_grads(x, y)
            for li, i in enumerate(self.local_workers):
                flat = self.layout.flatten({n: g[li] for n, g in grads.items()}, out=self._flat)
                for j, (lo, hi) in enumerate(self.bounds):
                    message = push_codec.encode(flat[lo:hi], self.push_states[i], shard_key(j))
                    tally.add("push", self.push_states[i].last)
                    outbox.append(Envelope(i, j, shard_key(j), message))
        else:
            losses, correct = torch.zeros(0), torch.zeros(0)
        client_seconds = time.perf_counter() - t0
        inbox = self.transport.exchange(outbox, step, "push")

        t1 = time.perf_counter()
        outbox = []
        by_shard: dict[int, list[Envelope]] = {j: [] for j in self.servers}
        for env in inbox:
            by_shard[env.receiver].append(env)
        order = self.arrival_order(step) if self.schedule == "async" else None
        for j, server in self.servers.items():
            if self.schedule == "async":
                for i, message, state in server.serve_in_order(by_shard[j], order, push_codec, pull_codec):
                    tally.add("pull", state.last)
                    outbox.append(Envelope(j, i, server.key, message))
                continue
            server.aggregate(by_shard[j], push_codec)
            message = server.pull_message(pull_codec)
            tally.add("pull", server.pull_state.last)
            outbox.extend(Envelope(j, i, server.key, message) for i in range(self.nodes))
        server_seconds = time.perf_counter() - t1
        inbox = self.transport.exchange(outbox, step, "pull")

        t2 = time.perf_counter()
        self._apply_pulls(inbox, pull_codec)
        client_seconds += time.perf_counter() - t2
        return StepReport(loss_sum=float(losses.sum()), correct=int(correct.sum()), samples=int(y.numel()),
                          local_workers=len(self.local_workers), worker_seconds=client_seconds,
                          server_seconds=server_seconds / max(1, len(self.servers)), tally=tally)

    def arrival_order(self, step: int) -> list[int]:
        """The order in which the servers take this step's pushes (asynchronous schedule):
        a permutation drawn from (seed, step), the same on every rank."""
        generator = torch.Generator().manual_seed(self.order_seed * 1_000_003 + step)
        return torch.randperm(self.nodes, generator=generator).tolist()

    def _apply_pulls(self, inbox: list[Envelope], codec: Codec) -> None:
        index = {k: li for li, k in enumerate(self.local_workers)}
        by_client: dict[int, list[Envelope]] = {}
        for env in inbox:
            by_client.setdefault(env.receiver, []).append(env)
        for i, envelopes in by_client.items():
            pulled = self._pulled
            for env in envelopes:
                lo, hi = self.bounds[int(env.tensor[len("shard"):])]
                codec.decode(env.message, self.pull_states(env.receiver, env.sender), env.tensor, out=pulled[lo:hi])
            li = index[i]
            for name, value in self.layout.views(pulled).items():
                target = self.replicas.params[name][li]
                target.copy_(value) if self.pull_mode == "params" else target.add_(value)

    @classmethod
    def from_config(cls, model, transport, config, steps_per_epoch: int):
        return cls(model, transport, config.workers, config.section, config.seed, config.loss)

    def state_dict(self) -> dict:
        return {
            "replicas": self.replicas.state_dict(),
            "push_states": {i: s.state_dict() for i, s in self.push_states.items()},
            "pull_states": self.pull_states.state_dict(),
            "servers": {j: s.state_dict() for j, s in self.servers.items()},
        }

    def load_state_dict(self, state: dict) -> None:
        self.replicas.load_state_dict(state["replicas"])
        for i, s in self.push_states.items():
            s.load_state_dict(state["push_states"][i])
        self.pull_states.load_state_dict(state["pull_states"])
        for j, s in self.servers.items():
            s.load_state_dict(state["servers"][j])

    def global_params(self) -> dict[str, torch.Tensor] | None:
        """The servers' shards assembled (collective: every rank calls it; rank 0 gets it)."""
        shards = {j: s.shard for j, s in self.servers.items()}
        if self.transport.world_size > 1:
            gathered = self.transport.all_gather_object({j: t.cpu() for j, t in shards.items()})
            if self.transport.rank != 0:
                return None
            shards = {j: t for part in gathered for j, t in part.items()}
        return self.layout.views(torch.cat([shards[j].to(self._flat.device) for j in range(self.nodes)]))

