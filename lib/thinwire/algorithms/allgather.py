"""An all-gather of compressed gradients: how a compressor that does not add up in its own
format (top-k, QSGD, ...) is used without a server, as a DDP communication hook with
``all_gather`` does (torch's ``ddp_comm_hooks``; Agarwal et al. 2022, Sec. 2, the all-gather
that sparsification and quantization need).

In one phase every worker sends each tensor, encoded once, to every other worker, and every
worker sums the K decoded messages in sender order, its own decoded as the others decode it,
so every worker holds the same bits. A worker's codec state keeps what the codec keeps
between steps (an error-feedback residual); each receiver keeps one decode state per sender.
"""

from __future__ import annotations

import torch

from ..codecs import Codec, CodecState, StateBook
from .round import Round


def allgather_sum(rnd: Round, phase: str, tensors: dict[str, torch.Tensor], local: list[int], workers: int,
                  codec: Codec, states: dict[int, CodecState], receive: StateBook) -> dict[str, torch.Tensor]:
    """The sum over all ``workers`` of each tensor ((L, ...) for the ``local`` workers), as
    decoded from the messages; the same (L, ...) tensor for every local worker."""
    own: dict[int, dict[str, bytearray]] = {}
    for i, j in enumerate(local):                                         # encode once, send to all
        others = [k for k in range(workers) if k != j]
        own[j] = {n: rnd.send(phase, j, others, n, t[i], codec, states[j]) for n, t in tensors.items()}
    inbox: dict[tuple[int, int, str], bytearray] = {}
    for env in rnd.exchange(phase):
        inbox[(env.receiver, env.sender, env.tensor)] = env.message
    out = {n: torch.zeros_like(t) for n, t in tensors.items()}
    for i, k in enumerate(local):                                         # sum in sender order
        for j in range(workers):
            for n, t in tensors.items():
                message = own[j][n] if j == k else inbox[(k, j, n)]
                with rnd.timed("decode"):
                    out[n][i] += codec.decode(message, receive(k, j), n, like=t[i])
    return out
