"""A ring all-reduce written as messages: what gloo's and NCCL's ring algorithms do for
``torch.distributed.all_reduce``, and so what DDP does once per gradient bucket
(Patarasuk & Yuan, "Bandwidth optimal all-reduce algorithms for clusters of
workstations", JPDC 2009).

K peers 0..K-1 in a ring; each holds a flat vector of the same length, cut into K chunks
whose sizes differ by at most one (``chunk_bounds``). Peer j sends only to j + 1:
1. reduce-scatter, hops s = 1..K-1: peer j sends its running sum of chunk (j - s + 1) mod K,
   and the receiver adds the decoded chunk to its own. After K - 1 hops peer j holds the
   whole sum of chunk (j + 1) mod K, the chunk it owns;
2. the owner replaces its chunk by what its own message will decode to (with fp16 or bf16
   the rounded sum; nothing is sent), so that every peer ends with the same bits;
3. all-gather, hops s = 1..K-1: peer j forwards chunk (j - s + 2) mod K (at hop 1, the one it
   owns) and the receiver overwrites its chunk with the decoded values.
Every hop is its own phase (``<prefix>.rs<s>``, ``<prefix>.ag<s>``), so the network model
prices the ring as 2 (K - 1) rounds of N / K values per link, each paying the fabric's
latency: the cost model of a bandwidth-optimal ring. The additions happen in the same
order on every transport, so the same seed gives the same sums in one process and on
gloo. Messages are the ring's codec's (``fp32``, ``fp16``, ``bf16``: DDP's default hook and
its ``fp16_compress_hook`` / ``bf16_compress_hook``, which also divide by K before sending,
as the callers here do).
"""

from __future__ import annotations

import torch

from ..codecs import Codec, CodecState
from .round import Round

RING_CODECS = ("fp32", "fp16", "bf16")


def ring_phases(prefix: str, peers: int) -> tuple[str, ...]:
    """The phase names of one all-reduce among ``peers``, in the order they run."""
    return (*(f"{prefix}.rs{s}" for s in range(1, peers)), *(f"{prefix}.ag{s}" for s in range(1, peers)))


def chunk_bounds(numel: int, peers: int) -> list[tuple[int, int]]:
    """``peers`` contiguous [lo, hi) ranges covering 0..numel, sizes differing by at most one."""
    cuts = [numel * c // peers for c in range(peers + 1)]
    return list(zip(cuts[:-1], cuts[1:]))


def ring_allreduce(rnd: Round, prefix: str, buffers: dict[int, torch.Tensor], peers: int, codec: Codec,
                   states: dict[int, CodecState]) -> None:
    """In place: every local peer's flat float32 buffer (peer id -> 1-D contiguous tensor)
    becomes the sum over all K peers' buffers, by steps 1-3 above. ``states``: each local
    peer's sending state (dense codecs keep none, but every send has one)."""
    numel = next(iter(buffers.values())).numel() if buffers else 0
    bounds = chunk_bounds(numel, peers)

    def chunk(j: int, c: int) -> torch.Tensor:
        lo, hi = bounds[c % peers]
        return buffers[j][lo:hi]

    for s in range(1, peers):                                                # 1. reduce-scatter
        phase = f"{prefix}.rs{s}"
        for j in buffers:
            c = (j - s + 1) % peers
            rnd.send(phase, j, [(j + 1) % peers], f"{prefix}[{c}]", chunk(j, c), codec, states[j])
        for env in rnd.exchange(phase):                                      # receiver r adds chunk r - s
            with rnd.timed("decode"):
                codec.accumulate(env.message, chunk(env.receiver, env.receiver - s), None, env.tensor)
    if codec.spec() != "fp32":                                               # 2. the owner rounds as sent
        for j in buffers:
            own = chunk(j, j + 1)
            with rnd.timed("encode"):
                message = codec.encode(own, CodecState(), f"{prefix}[{(j + 1) % peers}]")
            with rnd.timed("decode"):
                codec.merge(message, own)
    for s in range(1, peers):                                                # 3. all-gather
        phase = f"{prefix}.ag{s}"
        for j in buffers:
            c = (j - s + 2) % peers
            rnd.send(phase, j, [(j + 1) % peers], f"{prefix}[{c}]", chunk(j, c), codec, states[j])
        for env in rnd.exchange(phase):                                      # receiver r takes chunk r - s + 1
            rnd.merge(codec, env, chunk(env.receiver, env.receiver - s + 1), None)
