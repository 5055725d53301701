"""One seed tree per run: every generator's seed is derived from (run seed, role, agent,
purpose), never from an offset added to the run seed.

Offsets collide: with ``seed + 3000 + k`` for one generator and ``seed + 3000 + k`` for
another, two generators draw the same numbers, and ``seed + 1000 + N j + i`` reaches the
next range once N is large. A ``SeedTree`` hashes the whole path instead, in the spirit of
``numpy.random.SeedSequence.spawn``: the run seed is the entropy, and (role, agent,
purpose, peer) is the spawn key. Role and purpose are names (``"worker"``, ``"push_codec"``,
``"data"``); their CRC-32 enters the key, so the same path gives the same seed on every
process and every machine, and distinct paths give distinct 63-bit seeds (a collision
among a run's few thousand generators has a probability below 10^-12).
"""

from __future__ import annotations

import zlib

import numpy as np


def _name(value: str, what: str) -> int:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{what}={value!r} is not allowed: {what} must be a non-empty name")
    return zlib.crc32(value.encode())


def _index(value: int | None, what: str) -> int:
    if value is None:
        return 0
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"{what}={value!r} is not allowed: {what} must be an int >= 0 or None")
    return value + 1


class SeedTree:
    """``SeedTree(run_seed).seed(role, agent, purpose, peer=None)`` -> an int in [0, 2^63)."""

    def __init__(self, run_seed: int):
        if not isinstance(run_seed, int) or isinstance(run_seed, bool) or run_seed < 0:
            raise ValueError(f"seed={run_seed!r} is not allowed: the run seed must be an int >= 0")
        self.run_seed = run_seed
        self.issued: dict[int, tuple] = {}  # seed -> the path it was issued for

    def seed(self, role: str, agent: int | None, purpose: str, peer: int | None = None) -> int:
        """The seed of the generator ``agent`` (in ``role``) uses for ``purpose``; ``peer``
        for a state kept per peer (a receiver's state for each sender) or a further index
        (a step). Two paths given one seed raise ``RuntimeError``."""
        key = (_name(role, "role"), _index(agent, "agent"), _name(purpose, "purpose"), _index(peer, "peer"))
        words = np.random.SeedSequence(self.run_seed, spawn_key=key).generate_state(2, np.uint32)
        seed = (int(words[0]) << 31) ^ int(words[1])  # 63 bits: a valid torch and numpy seed
        path = (role, agent, purpose, peer)
        if self.issued.setdefault(seed, path) != path:
            raise RuntimeError(f"seed tree {self.run_seed}: {path} and {self.issued[seed]} were given one seed")
        return seed

    def pairs(self, role: str, purpose: str):
        """``(owner, peer) -> seed``: the seed function of a ``StateBook``."""
        return lambda owner, peer: self.seed(role, owner, purpose, peer)

    def __repr__(self) -> str:
        return f"SeedTree({self.run_seed})"
