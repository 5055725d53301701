"""The transport interface: agents exchange envelopes in lock-step phases.

Every process calls ``exchange`` once per phase with the envelopes its local agents
send, and gets back the envelopes addressed to its local agents, sorted by (receiver,
sender, tensor). The same algorithm code therefore runs with all agents in one process
or spread over torch.distributed ranks. Each sent envelope is recorded in the ledger, and
each exchange's entry and exit times (``time.monotonic``) in ``timeline``: on one host the
ranks share that clock, so the time from the last rank's entry to the last rank's exit is
what the phase took on the network, whatever the ranks' compute skew (``phase_spans``).
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod

from .envelope import Envelope
from .ledger import Ledger


class Transport(ABC):
    # messages may be uint8 tensors (``engine/wire/tensor_message.py``): a GPU tensor's
    # message then stays on its device (the in-process transport moves objects, so any kind)
    tensor_messages: bool = False

    def __init__(self):
        self.ledger = Ledger()
        self.exchange_seconds = 0.0
        self.timeline: list[tuple[int, str, float, float]] = []  # (step, phase, entered, left)

    @property
    @abstractmethod
    def world_size(self) -> int:
        """Number of processes."""

    @property
    @abstractmethod
    def rank(self) -> int:
        """This process's index."""

    def rank_of(self, agent: int) -> int:
        """The process that hosts ``agent`` (agents are spread round-robin)."""
        return agent % self.world_size

    def is_local(self, agent: int) -> bool:
        return self.rank_of(agent) == self.rank

    def exchange(self, outbox: list[Envelope], step: int, phase: str) -> list[Envelope]:
        payloads: dict[int, int] = {}  # one message sent to several receivers is measured once
        for env in outbox:
            if not self.is_local(env.sender):
                raise ValueError(f"agent {env.sender} is not hosted by rank {self.rank}")
            payload = payloads.get(id(env.message))
            if payload is None:
                payload = payloads[id(env.message)] = env.payload_nbytes
            self.ledger.record(step, phase, env.sender, env.receiver, env.tensor, env.nbytes, payload)
        entered = time.monotonic()
        inbox = self._deliver(outbox)
        self.timeline.append((step, phase, entered, time.monotonic()))
        return sorted(inbox, key=Envelope.sort_key)

    @abstractmethod
    def _deliver(self, outbox: list[Envelope]) -> list[Envelope]:
        """Move envelopes to the processes hosting their receivers."""

    @abstractmethod
    def all_gather_object(self, obj) -> list:
        """Metrics and results between processes; not part of the modelled traffic."""

    def barrier(self) -> None:
        """Wait until every process gets here (nothing to wait for in one process)."""

    def merged_ledger(self) -> Ledger:
        """Every rank's ledger, merged (collective)."""
        merged = Ledger()
        for part in self.all_gather_object(self.ledger):
            merged.extend(part)
        return merged


def phase_spans(timelines: list[list[tuple[int, str, float, float]]]) -> dict[tuple[int, str], float]:
    """(step, phase) -> seconds from the last rank's entry to the last rank's exit, from
    every rank's ``timeline`` (ranks on one host, one clock). A phase called several times
    in a step adds its calls' spans, matched in order."""
    calls: dict[tuple[int, str], list[list[tuple[float, float]]]] = {}
    for timeline in timelines:
        seen: dict[tuple[int, str], int] = {}
        for step, phase, entered, left in timeline:
            i = seen.get((step, phase), 0)
            seen[(step, phase)] = i + 1
            per_call = calls.setdefault((step, phase), [])
            if len(per_call) <= i:
                per_call.append([])
            per_call[i].append((entered, left))
    return {key: sum(max(l for _, l in ranks) - max(e for e, _ in ranks) for ranks in per_call)
            for key, per_call in calls.items()}
