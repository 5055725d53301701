"""The body of one round, written once: what every algorithm's ``step()`` does between its
paper's numbered steps.

A ``Round`` is opened at the start of a step and closed into its ``StepReport``:
- ``send``: the policy's decision (timed as selection), the encode (timed, less the
  selection the codec reported, e.g. top-k or a drop threshold), the statistics into the
  tally, and one envelope per receiver into the outbox of the next exchange. A GPU
  tensor's message is a uint8 tensor on its device when the transport carries those
  (``Transport.tensor_messages``: in one process, and under NCCL) and the codec reads them
  there (``Codec.reads_device_messages``), so it is never copied to the host; the same
  bytes either way;
- ``exchange(phase)``: the outbox goes through the transport; the seconds spent there are
  kept per phase (``StepReport.exchange_seconds``, a metric per step beside the ledger);
- ``decode`` / ``merge`` / ``accumulate``: a received message decoded with the receiver's
  state, timed as decode; ``timed(part)`` times any other codec work (a server's sum); the
  framing and checksum inside an encode or decode (``engine/wire/clock.py``) is its own part,
  ``frame``;
- ``priced(network, agent)``: the round's messages to and from ``agent`` priced on a
  network model, as the ledger is priced after the run (an agent that reads its time);
- ``as_server()`` / ``as_worker()``: which side the time since the last switch belongs to.
  Measured time outside the transport is charged to the current side: ``worker_seconds``
  and ``server_seconds`` of the report, the codec seconds inside them split by part.

``ready(codec)`` and ``ready(policy)`` load or compile the kernels a codec or policy uses
when the agent is built, so no timed step carries them.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from typing import Iterable

import torch

from ..codecs import Codec, CodecState
from ..engine import device, wire
from ..comm import Envelope, Transport
from ..policies import Decision, Policy
from .report import CodecTimes, StepReport, Tally

SIDES = ("worker", "server")


def local_gradients(replicas, x: torch.Tensor, y: torch.Tensor):
    """(losses, correct, grads) of the local agents' batches; empty on a process that hosts
    no training agent (x of length 0)."""
    if x.shape[0] == 0:
        return torch.zeros(0), torch.zeros(0), {}
    return replicas.loss_and_grads(x, y)


def worker_seeds(seeds, workers: list[int], purpose: str) -> list[int]:
    """One seed per local worker for ``purpose`` (one for a process without workers, whose
    batched replicas still hold one copy)."""
    return [seeds.seed("worker", k, purpose) for k in workers] or [seeds.seed("worker", None, purpose)]


def ready(thing):
    """Warm ``thing`` (a codec or a policy) up and return it."""
    thing.warm_up()
    return thing


class Round:
    """One step's bookkeeping; see the module docstring."""

    def __init__(self, transport: Transport, step: int):
        self.transport, self.step = transport, step
        self.tally = Tally()
        self.outbox: list[Envelope] = []
        self.busy = dict.fromkeys(SIDES, 0.0)
        self.codec = {side: CodecTimes() for side in SIDES}
        self.exchange_seconds: dict[str, float] = {}
        self.side = "worker"
        self._since = self.started = time.perf_counter()
        self._seen: dict[str, tuple[list, list]] = {}  # phase -> (envelopes sent, envelopes received)

    # -- whose time ------------------------------------------------------------------------
    def _charge(self) -> float:
        now = time.perf_counter()
        self.busy[self.side] += now - self._since
        self._since = now
        return now

    def as_server(self) -> Round:
        self._charge()
        self.side = "server"
        return self

    def as_worker(self) -> Round:
        self._charge()
        self.side = "worker"
        return self

    @contextmanager
    def untimed(self):
        """Work that is not the method's (measurements for figures): charged to no side."""
        self._charge()
        try:
            yield
        finally:
            self._since = time.perf_counter()

    @contextmanager
    def timed(self, part: str):
        """Codec work of the current side (``select``, ``encode`` or ``decode``), the
        framing inside it (``wire.clock``) apart, as ``frame``."""
        t0, f0 = time.perf_counter(), wire.clock.spent()
        try:
            yield
        finally:
            framing = wire.clock.spent() - f0
            self.codec[self.side].add(part, time.perf_counter() - t0 - framing)
            self.codec[self.side].add("frame", framing)

    # -- sending ---------------------------------------------------------------------------
    def decide(self, policy: Policy | None, key: str, tensor: torch.Tensor) -> Decision | None:
        """The policy's decision for ``tensor`` (None without a policy), timed as selection."""
        if policy is None:
            return None
        with self.timed("select"):
            return policy.decide(self.step, key, tensor)

    def send(self, phase: str, sender: int, receivers: Iterable[int], key: str, tensor: torch.Tensor,
             codec: Codec, state: CodecState, policy: Policy | None = None,
             decision: Decision | None = None) -> bytearray | torch.Tensor | None:
        """Decide (unless ``decision`` is given), encode, count, address; the message, or
        None when the policy decided not to send."""
        if decision is None:
            decision = self.decide(policy, key, tensor)
        if decision is not None and not decision.send:
            self.tally.skip(phase)
            return None
        t0, f0 = time.perf_counter(), wire.clock.spent()
        out = None
        if self.transport.tensor_messages and device.on_device(tensor) and codec.reads_device_messages:
            # a GPU tensor's message stays there (a codec that decodes on the host keeps host messages)
            out = torch.empty(0, dtype=torch.uint8, device=tensor.device)
        message = codec.encode(tensor, state, key, decision, out=out)
        spent, chose, framing = time.perf_counter() - t0, state.last.select_seconds, wire.clock.spent() - f0
        self.codec[self.side].add("select", chose)
        self.codec[self.side].add("encode", spent - chose - framing)
        self.codec[self.side].add("frame", framing)
        self.tally.add(phase, state.last)
        if policy is not None:
            policy.sent(self.step, key, tensor, decision)
        self.outbox.extend(Envelope(sender, r, key, message) for r in receivers)
        return message

    def exchange(self, phase: str) -> list[Envelope]:
        """Deliver the outbox in ``phase``; the envelopes addressed to this process's agents."""
        start = self._charge()
        sent, received = self._seen.setdefault(phase, ([], []))
        sent += self.outbox
        inbox = self.transport.exchange(self.outbox, self.step, phase)
        received += inbox
        self.outbox = []
        self._since = time.perf_counter()
        self.exchange_seconds[phase] = self.exchange_seconds.get(phase, 0.0) + self._since - start
        return inbox

    def priced(self, network, agent: int) -> float:
        """The modelled seconds of this round's phases so far on ``network`` (``comm/network.py``),
        from the messages ``agent`` sent and received: the whole round where every message goes
        to or from it (a parameter server's)."""
        return sum(network.phase_seconds([(e.sender, e.receiver, e.nbytes) for e in sent if e.sender == agent]
                                         + [(e.sender, e.receiver, e.nbytes) for e in received if e.receiver == agent])
                   for sent, received in self._seen.values())

    def elapsed(self) -> float:
        """Wall seconds since the round opened."""
        return time.perf_counter() - self.started

    # -- receiving -------------------------------------------------------------------------
    def decode(self, codec: Codec, env: Envelope, state: CodecState | None, **kwargs) -> torch.Tensor:
        with self.timed("decode"):
            return codec.decode(env.message, state, env.tensor, **kwargs)

    def merge(self, codec: Codec, env: Envelope, into: torch.Tensor, state: CodecState | None) -> int:
        with self.timed("decode"):
            return codec.merge(env.message, into, state, env.tensor)

    # -- the report ------------------------------------------------------------------------
    def report(self, losses: torch.Tensor, correct: torch.Tensor, y: torch.Tensor, local_workers: int,
               servers: int = 1, extra: dict | None = None) -> StepReport:
        """Close the round. ``servers``: server agents this process hosts (their time is
        reported per agent, as they would run in parallel)."""
        self._charge()
        per = 1.0 / max(1, servers)
        return StepReport(loss_sum=float(losses.sum()), correct=int(correct.sum()), samples=int(y.numel()),
                          local_workers=local_workers, worker_seconds=self.busy["worker"],
                          server_seconds=self.busy["server"] * per, worker_codec=self.codec["worker"],
                          server_codec=self.codec["server"].scaled(per), exchange_seconds=self.exchange_seconds,
                          tally=self.tally, extra=extra or {})
