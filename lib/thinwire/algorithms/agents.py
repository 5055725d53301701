"""The worker side every algorithm builds alike, written once: the agents this process hosts,
the seed tree, their batched replicas, each one's sending codec state and the book of its
receiving states, all declared for checkpoints (``declared.py``)."""

from __future__ import annotations

from ..codecs import CodecState, StateBook
from ..models import Replicas
from ..seed_tree import SeedTree
from .declared import Declared
from .round import worker_seeds


def set_up_workers(algo: Declared, model, transport, agents: int, seed: int, loss: str = "cross_entropy",
                   role: str = "worker", sends: str = "push_states",
                   receives: tuple[str, str] = ("pull_states", "pull_receive"), **replica_options) -> SeedTree:
    """Set on ``algo``: ``local_workers`` (the ids below ``agents`` the transport hosts here),
    ``seeds`` (the run's seed tree, returned), ``replicas`` (one model copy per local agent,
    each with its own dropout generator), ``<sends>`` (agent -> its sending ``CodecState``,
    seeded by (``role``, agent, ``"push_codec"``)) and ``<receives[0]>`` (the ``StateBook``
    of what each receives, seeded under ``receives[1]``)."""
    algo.local_workers = [k for k in range(agents) if transport.is_local(k)]
    algo.seeds = seeds = SeedTree(seed)
    algo.replicas = algo.declare("replicas", Replicas(model, max(1, len(algo.local_workers)), loss=loss,
                                                      seeds=worker_seeds(seeds, algo.local_workers, "dropout"),
                                                      **replica_options))
    setattr(algo, sends, algo.declare(sends, {k: CodecState(seeds.seed(role, k, "push_codec"))
                                              for k in algo.local_workers}))
    book, purpose = receives
    setattr(algo, book, algo.declare(book, StateBook(seeds.pairs(role, purpose))))
    return seeds
