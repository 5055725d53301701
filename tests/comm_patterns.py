"""The five papers' communication patterns, written once against the Transport interface,
and a helper that runs a function on N gloo processes. Imported by test_transports.py."""

import hashlib
import os

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from thinwire.codecs import CodecState, make_codec
from thinwire.comm import DistributedTransport, Envelope, InProcessTransport

NODES = 4
CODEC = make_codec("ef(topk(ratio=0.25))")


def _digest(t: torch.Tensor) -> str:
    return hashlib.sha256(t.numpy().tobytes()).hexdigest()[:12]


def _tensor(agent: int, step: int, n: int = 40) -> torch.Tensor:
    return torch.randn(n, generator=torch.Generator().manual_seed(1000 * step + agent))


def run_patterns(transport) -> list:
    """Returns what every local agent received, as (pattern, step, receiver, sender, tensor, digest)."""
    seen = []
    local = [a for a in range(NODES + 1) if transport.is_local(a)]

    def note(pattern, step, inbox, decode=CODEC.decode):
        for e in inbox:
            seen.append((pattern, step, e.receiver, e.sender, e.tensor, _digest(decode(e.message))))

    states = {a: CodecState(a) for a in range(NODES + 1)}
    server = NODES
    for step in range(3):
        # 1. parameter-server star: push, aggregate, pull
        out = [Envelope(k, server, "w", CODEC.encode(_tensor(k, step), states[k], "w"))
               for k in local if k < NODES]
        inbox = transport.exchange(out, step, "push")
        note("star-push", step, inbox)
        out = []
        if transport.is_local(server):
            mean = sum(CODEC.decode(e.message) for e in inbox) / NODES
            msg = make_codec("fp32").encode(mean)
            out = [Envelope(server, k, "w", msg) for k in range(NODES)]
        note("star-pull", step, transport.exchange(out, step, "pull"), make_codec("fp32").decode)

        # 2. sharded servers: node i serves slice i of every tensor
        out = []
        for k in (a for a in local if a < NODES):
            shards = _tensor(k, step, 4 * NODES).chunk(NODES)
            out += [Envelope(k, i, f"w[{i}]", CODEC.encode(shards[i], states[k], f"w[{i}]")) for i in range(NODES)]
        note("sharded", step, transport.exchange(out, step, "shard"))

        # 3. ring neighbours, each tensor sent only on an "event" (here: a seeded coin)
        out = []
        for k in (a for a in local if a < NODES):
            for name in ("a", "b"):
                if (k + step + len(name)) % 2 == 0:
                    msg = CODEC.encode(_tensor(k, step), states[k], name)
                    out += [Envelope(k, (k + 1) % NODES, name, msg), Envelope(k, (k - 1) % NODES, name, msg)]
        note("ring", step, transport.exchange(out, step, "ring"))

        # 4. a small control message (e.g. a bit width) broadcast by the server
        out = []
        if transport.is_local(server):
            msg = make_codec("fp32").encode(torch.tensor([float(2 + step)]))
            out = [Envelope(server, k, "bits", msg) for k in range(NODES)]
        note("control", step, transport.exchange(out, step, "control"), make_codec("fp32").decode)
    return seen


def _worker(rank, world, port, queue):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        transport = DistributedTransport()
        seen = run_patterns(transport)
        rows = transport.merged_ledger().rows()
        queue.put((rank, seen, rows))
    finally:
        dist.destroy_process_group()


def run_patterns_on_gloo(world: int, port: int):
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(r, world, port, queue)) for r in range(world)]
    for p in procs:
        p.start()
    results = [queue.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    return results


def run_patterns_in_process():
    transport = InProcessTransport()
    return run_patterns(transport), transport.ledger.rows()
