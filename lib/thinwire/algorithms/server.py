"""The base of every server-side agent: Plump-DP's center agent, a sharded parameter
server's shard, Oland & Raj's averaging agent (and Slim-DP's center, MQGrad's server).

What they share, written once:
- ``params``: the tensors this agent owns (name -> tensor);
- ``push_states``: the receiver's own codec state for each sender;
- ``pull_state``: the sender state of what it sends back;
- ``sum_pushes``: add every decoded push (a sparse one entry by entry) in sender order, so
  the sum is the same float result on every transport;
- checkpoints: the above plus what a subclass adds in ``extra_state``.
"""

from __future__ import annotations

import time
from typing import Callable, Iterable

import torch

from ..codecs import Codec, CodecState
from ..comm import Envelope


class ServerAgent:
    def __init__(self, params: dict[str, torch.Tensor], push_codec: Codec, pull_codec: Codec,
                 senders: Iterable[int], push_seed: Callable[[int], int], pull_seed: int):
        self.params = {n: p.detach().clone() for n, p in params.items()}
        self.push_codec, self.pull_codec = push_codec, pull_codec
        self.push_states = {k: CodecState(push_seed(k)) for k in senders}
        self.pull_state = CodecState(pull_seed)
        self._decoded = {n: torch.empty_like(p) for n, p in self.params.items()}
        self._total = {n: torch.empty_like(p) for n, p in self.params.items()}
        self.decode_seconds = 0.0  # of the last sum_pushes

    def decode_push(self, env: Envelope, codec: Codec | None = None) -> torch.Tensor:
        """One push decoded with its sender's state (a reused buffer: use before the next
        call); ``codec`` overrides ``push_codec`` (dense warm-up steps)."""
        return (codec or self.push_codec).decode(env.message, self.push_states[env.sender], env.tensor,
                                                 out=self._decoded[env.tensor])

    def sum_pushes(self, pushes: list[Envelope], codec: Codec | None = None) -> dict[str, torch.Tensor]:
        """The sum of the decoded pushes per tensor (a reused buffer: use before the next call);
        ``decode_seconds`` keeps how long it took (codec time, ``StepReport.server_codec_seconds``)."""
        t0 = time.perf_counter()
        for t in self._total.values():
            t.zero_()
        for env in sorted(pushes, key=lambda e: (e.sender, e.tensor)):
            (codec or self.push_codec).accumulate(env.message, self._total[env.tensor], self.push_states[env.sender],
                                                  env.tensor, scratch=self._decoded[env.tensor])
        self.decode_seconds = time.perf_counter() - t0
        return self._total

    def extra_state(self) -> dict:
        """What a subclass adds to the checkpoint (optimizer, copies)."""
        return {}

    def load_extra_state(self, state: dict) -> None:
        pass

    def state_dict(self) -> dict:
        return {"params": {n: p.clone() for n, p in self.params.items()},
                "push_states": {k: s.state_dict() for k, s in self.push_states.items()},
                "pull_state": self.pull_state.state_dict(), "extra": self.extra_state()}

    def load_state_dict(self, state: dict) -> None:
        for name, p in self.params.items():
            p.copy_(state["params"][name])
        for k, s in self.push_states.items():
            s.load_state_dict(state["push_states"][k])
        self.pull_state.load_state_dict(state["pull_state"])
        self.load_extra_state(state["extra"])
