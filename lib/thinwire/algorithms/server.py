"""The base of every server-side agent: Plump-DP's center agent, a sharded parameter
server's shard, Oland & Raj's averaging agent (and Slim-DP's center, MQGrad's server).

What they share, written once:
- ``params``: the tensors this agent owns (name -> tensor);
- ``push_states``: the receiver's own codec state for each sender;
- ``pull_state``: the sender state of what it sends back;
- ``sum_pushes``: add every decoded push (a sparse one entry by entry) in sender order, so
  the sum is the same float result on every transport; timed as the round's decode;
- checkpoints: the above are declared (``declared.py``); a subclass declares what it adds
  (optimizer, copies, policies).
"""

from __future__ import annotations

from typing import Iterable

import torch

from ..codecs import Codec, CodecState
from ..comm import Envelope
from ..seed_tree import SeedTree
from .declared import Declared
from .round import Round


class ServerAgent(Declared):
    def __init__(self, params: dict[str, torch.Tensor], push_codec: Codec, pull_codec: Codec,
                 senders: Iterable[int], seeds: SeedTree, agent: int, role: str = "server"):
        """``agent``: this agent's id; its generators' seeds come from ``seeds`` under
        (``role``, ``agent``)."""
        self.params = self.declare("params", {n: p.detach().clone() for n, p in params.items()})
        self.push_codec, self.pull_codec = push_codec, pull_codec
        self.push_states = self.declare("push_states", {k: CodecState(seeds.seed(role, agent, "push_receive", k))
                                                        for k in senders})
        self.pull_state = self.declare("pull_state", CodecState(seeds.seed(role, agent, "pull_codec")))
        self._decoded = {n: torch.empty_like(p) for n, p in self.params.items()}
        self._total = {n: torch.empty_like(p) for n, p in self.params.items()}

    def decode_push(self, rnd: Round, env: Envelope, codec: Codec | None = None) -> torch.Tensor:
        """One push decoded with its sender's state (a reused buffer: use before the next
        call); ``codec`` overrides ``push_codec`` (dense warm-up steps)."""
        return rnd.decode(codec or self.push_codec, env, self.push_states[env.sender], out=self._decoded[env.tensor])

    def sum_pushes(self, rnd: Round, pushes: list[Envelope], codec: Codec | None = None) -> dict[str, torch.Tensor]:
        """The sum of the decoded pushes per tensor (a reused buffer: use before the next call)."""
        with rnd.timed("decode"):
            for t in self._total.values():
                t.zero_()
            for env in sorted(pushes, key=lambda e: (e.sender, e.tensor)):
                (codec or self.push_codec).accumulate(env.message, self._total[env.tensor],
                                                      self.push_states[env.sender], env.tensor,
                                                      scratch=self._decoded[env.tensor])
        return self._total
