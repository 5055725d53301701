"""Codec states by (owner, peer): each agent's own state for what it sends to, or
receives from, each peer.

A receiver's state for a sender holds what decoding needs beyond the message: the last
copy received (EventGraD), cached keys (Slim-DP). Seeds are a function of (owner, peer),
(``SeedTree.pairs``), so every process builds the same state for the same pair, and ``state_dict`` saves the
states (generators included) with a checkpoint.
"""

from __future__ import annotations

from typing import Callable

from .state import CodecState


class StateBook:
    def __init__(self, seed_of: Callable[[int, int], int]):
        self.seed_of = seed_of
        self.states: dict[tuple[int, int], CodecState] = {}

    def __call__(self, owner: int, peer: int) -> CodecState:
        state = self.states.get((owner, peer))
        if state is None:
            state = self.states[(owner, peer)] = CodecState(self.seed_of(owner, peer))
        return state

    def state_dict(self) -> dict:
        return {pair: s.state_dict() for pair, s in self.states.items()}

    def load_state_dict(self, state: dict) -> None:
        self.states = {}
        for pair, saved in state.items():
            self(*pair).load_state_dict(saved)

