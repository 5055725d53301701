"""What a step reports to the runner: ``StepReport``, with codec and policy statistics
summed per phase in a ``Tally`` and codec time split in ``CodecTimes``. Typed, so a new
statistic is a new field, not a string."""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from ..codecs.stats import SendStats


@dataclass
class PhaseTally:
    """Sums over the encodes of one phase (one process, one step)."""

    offered: int = 0        # encodes asked for (tensors a policy or codec considered)
    sent: int = 0           # encodes that produced a message
    values: int = 0         # entries offered by the encodes that were sent
    kept: int = 0           # entries sent (sparsifiers; dense codecs count every entry)
    tied: int = 0           # entries tied at a drop threshold
    sparse: int = 0         # sent encodes that reported ``kept`` (density is defined)
    bits_sum: float = 0.0   # sum of bit widths over encodes that reported one
    bits_count: int = 0
    entropy_sum: float = 0.0
    entropy_count: int = 0

    def add(self, stats: SendStats) -> None:
        self.offered += 1
        if not stats.sent:
            return
        self.sent += 1
        self.values += stats.values
        self.kept += stats.values if stats.kept is None else stats.kept
        if stats.kept is not None:
            self.sparse += 1
        self.tied += stats.tied or 0
        if stats.bits is not None:
            self.bits_sum += stats.bits
            self.bits_count += 1
        if stats.entropy is not None:
            self.entropy_sum += stats.entropy
            self.entropy_count += 1

    def merge(self, other: PhaseTally) -> None:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))


class Tally(dict):
    """phase -> ``PhaseTally``; ``tally.add("push", state.last)`` after each encode."""

    def add(self, phase: str, stats: SendStats) -> None:
        self.setdefault(phase, PhaseTally()).add(stats)

    def skip(self, phase: str) -> None:
        """A policy decided not to send one tensor."""
        self.add(phase, SendStats(sent=False))

    def merge(self, other: Tally) -> None:
        for phase, t in other.items():
            self.setdefault(phase, PhaseTally()).merge(t)

    def metrics(self) -> dict[str, float | None]:
        """Per phase: ``<phase>_density`` (kept / values, sparsifiers only), ``<phase>_tied``
        (tied / values), ``<phase>_bits`` and ``<phase>_entropy`` (means), ``<phase>_sent``
        (fraction of offered tensors sent). None where a statistic was not reported."""
        out: dict[str, float | None] = {}
        for phase, t in self.items():
            sparse = t.sparse and t.values
            out[f"{phase}_density"] = t.kept / t.values if sparse else None
            out[f"{phase}_tied"] = t.tied / t.values if sparse else None
            out[f"{phase}_bits"] = t.bits_sum / t.bits_count if t.bits_count else None
            out[f"{phase}_entropy"] = t.entropy_sum / t.entropy_count if t.entropy_count else None
            out[f"{phase}_sent"] = t.sent / t.offered if t.offered else None
        return out


CODEC_PARTS = ("select", "encode", "decode", "frame")


@dataclass
class CodecTimes:
    """Codec seconds of one side (workers or servers) of one step, by part."""

    select: float = 0.0   # choosing what to send: policy decisions, core/explorer keys, top-k, drop thresholds
    encode: float = 0.0   # compressing (encode's time less the selection it reported and the framing)
    decode: float = 0.0   # decoding, merging, accumulating received messages (less the framing)
    frame: float = 0.0    # the workbench's framing and checksum, out and in (``engine/wire/clock.py``)

    @property
    def total(self) -> float:
        return self.select + self.encode + self.decode + self.frame

    def add(self, part: str, seconds: float) -> None:
        setattr(self, part, getattr(self, part) + seconds)

    def scaled(self, factor: float) -> CodecTimes:
        return CodecTimes(self.select * factor, self.encode * factor, self.decode * factor, self.frame * factor)


@dataclass
class StepReport:
    """One process's account of one step (the runner merges every rank's)."""

    loss_sum: float = 0.0          # sum over local training agents of their mean batch loss
    correct: int = 0               # correct predictions over local batches
    samples: int = 0               # samples in local batches
    local_workers: int = 0         # agents that trained here this step
    worker_seconds: float = 0.0    # measured time of their work, summed (divided by local_workers)
    server_seconds: float = 0.0    # measured time of server-side agents (the slowest counts)
    worker_codec: CodecTimes = field(default_factory=CodecTimes)  # the part of worker_seconds spent choosing,
    #                                                                 encoding, decoding, merging (summed)
    server_codec: CodecTimes = field(default_factory=CodecTimes)  # the part of server_seconds spent so
    exchange_seconds: dict[str, float] = field(default_factory=dict)  # phase -> measured time in the transport
    tally: Tally = field(default_factory=Tally)          # codec and policy statistics by phase
    extra: dict[str, float] = field(default_factory=dict)  # algorithm measurements, mean over local workers
    stop: bool = False             # the algorithm's run is over after this step (a time budget spent)
