"""Turning the ledger into seconds on a modelled cluster.

Each agent is a node with one full-duplex link of ``bandwidth_bytes_per_s`` to a
non-blocking switch. In one phase a node sends its outgoing bytes and receives its
incoming bytes at link speed; the phase ends when the busiest link is done:

    phase_seconds = latency_s + max over nodes and directions of
                    (bytes * (1 + wire_overhead) / bandwidth + messages * message_latency_s)

so a parameter server receiving K pushes pays K x the bytes (incast), while a ring or
sharded exchange spreads the load. ``latency_s`` is paid once per phase (one round of a
synchronous exchange); ``message_latency_s`` (default 0) is paid by a node for every
message it sends or receives, so schemes that send fewer messages (EventGraD's events)
gain even when the messages are small. ``wire_overhead`` (default 0) is what the layers
below add per byte of message: over TCP/IPv4 on Ethernet with timestamps, each segment of
1448 bytes travels as a 1514-byte frame, so 66 / 1448 = 4.6% (``TCP_ETHERNET``). Messages an
agent sends to itself cost nothing. With ``per_peer`` a node pays ``message_latency_s`` once
per peer it sends to or receives from in a phase, however many messages go between them:
torch.distributed's transport sends them as one frame (``comm/distributed.py``), as DDP sends
a bucket; without it (the default) once per message, as MPI sends each tensor. With
``node_messages`` a node pays ``message_latency_s`` for the messages it sends and those it
receives together, while its bytes still go both ways at once:

    phase_seconds = latency_s + max over nodes of
                    (max(bytes out, bytes in) * (1 + wire_overhead) / bandwidth
                     + (messages out + messages in) * message_latency_s)

as when one thread of the host handles every message: gloo's TCP transport runs one epoll
loop per device for the I/O of all its pairs (gloo/transport/tcp/loop.h), so a node of
EventGraD's ring, sending to and receiving from two peers, pays four message costs where a
node of a ring all-reduce pays two (measured: ``netcheck/fit.py``).

How far this is from a real network, and the fixed costs of torch.distributed's exchange on
one, is measured by ``thinwire netcheck`` (``netcheck/``).

A config names a preset (``"ethernet_10g"``) or describes its own network:
``"link(bandwidth_bytes_per_s=1.25e9, latency_s=5e-5, message_latency_s=1e-6)"``.
``register_network`` adds a preset (from a plug-in, ``thinwire/plugins.py``).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, replace

import numpy as np

from .ledger import Ledger


FIELDS = ("bandwidth_bytes_per_s", "latency_s", "message_latency_s", "wire_overhead")  # numbers
SWITCHES = ("per_peer", "node_messages")  # booleans
TCP_ETHERNET = 66 / 1448  # Ethernet 14 + IPv4 20 + TCP 20 + timestamps 12 bytes per 1448-byte segment


def phase_loads(messages: list[tuple[int, int, int]], per_peer: bool = False) -> dict[tuple[int, str], list[int]]:
    """(node, direction) -> [bytes, messages] of one phase's (sender, receiver, bytes); with
    ``per_peer`` the messages between one pair count once. Self-addressed messages are free."""
    load: dict[tuple[int, str], list[int]] = defaultdict(lambda: [0, 0])
    pairs = set()
    for sender, receiver, nbytes in messages:
        if sender != receiver:
            first = (sender, receiver) not in pairs
            pairs.add((sender, receiver))
            for node in ((sender, "out"), (receiver, "in")):
                load[node][0] += nbytes
                load[node][1] += first or not per_peer
    return load


def node_loads(messages: list[tuple[int, int, int]], per_peer: bool = False) -> dict[int, tuple[int, int, int, int]]:
    """node -> (bytes out, bytes in, messages out, messages in) of one phase (``phase_loads``)."""
    load = phase_loads(messages, per_peer)
    none = (0, 0)
    return {n: (load.get((n, "out"), none)[0], load.get((n, "in"), none)[0],
                load.get((n, "out"), none)[1], load.get((n, "in"), none)[1])
            for n in sorted({node for node, _ in load})}


@dataclass(frozen=True)
class NetworkModel:
    name: str
    bandwidth_bytes_per_s: float
    latency_s: float
    message_latency_s: float = 0.0
    wire_overhead: float = 0.0
    per_peer: bool = False  # messages between one pair in one phase cost one message_latency_s
    node_messages: bool = False  # a node's messages out and in add up (one thread handles both)

    def __post_init__(self):
        for name in SWITCHES:
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name}={getattr(self, name)!r} is not allowed: it must be True or False")
        for name in FIELDS:
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not value >= 0 or \
                    (name == "bandwidth_bytes_per_s" and not value > 0):
                raise ValueError(f"{name}={value!r} is not allowed: it must be a number "
                                 f"{'> 0' if name == 'bandwidth_bytes_per_s' else '>= 0'}")

    def with_message_latency(self, seconds: float) -> NetworkModel:
        return replace(self, message_latency_s=seconds)

    def node_seconds(self, bytes_out, bytes_in, messages_out, messages_in):
        """A node's time in one phase (numbers, or arrays of them), without ``latency_s``."""
        per_byte = (1.0 + self.wire_overhead) / self.bandwidth_bytes_per_s
        if self.node_messages:
            return np.maximum(bytes_out, bytes_in) * per_byte + (messages_out + messages_in) * self.message_latency_s
        return np.maximum(bytes_out * per_byte + messages_out * self.message_latency_s,
                          bytes_in * per_byte + messages_in * self.message_latency_s)

    def phase_seconds(self, messages: list[tuple[int, int, int]]) -> float:
        nodes = node_loads(messages, self.per_peer)
        if not nodes:
            return 0.0
        return self.latency_s + float(max(self.node_seconds(*counts) for counts in nodes.values()))

    def messages_paid(self, messages: list[tuple[int, int, int]]) -> int:
        """The most messages a node pays ``message_latency_s`` for in one phase: in one
        direction, or out and in together (``node_messages``)."""
        counts = node_loads(messages, self.per_peer).values()
        if self.node_messages:
            return max((m_out + m_in for _, _, m_out, m_in in counts), default=0)
        return max((max(m_out, m_in) for _, _, m_out, m_in in counts), default=0)

    def seconds_per_step(self, ledger: Ledger, steps: int) -> np.ndarray:
        seconds = np.zeros(steps)
        for (step, _), messages in ledger.by_phase_step().items():
            seconds[step] += self.phase_seconds(messages)
        return seconds

    def price(self, loads: PhaseLoads, steps: int) -> np.ndarray:
        """``seconds_per_step`` from loads made once (``PhaseLoads``): the same numbers, as
        array operations, for pricing one ledger on many networks."""
        if loads.per_peer != self.per_peer:
            raise ValueError(f"loads counted with per_peer={loads.per_peer}, the model has per_peer={self.per_peer}")
        seconds = np.zeros(steps)
        if len(loads.steps):
            busiest = self.node_seconds(*loads.bytes, *loads.messages).max(axis=1)
            np.add.at(seconds, loads.steps, self.latency_s + busiest)
        return seconds


class PhaseLoads:
    """Each (step, phase)'s bytes and messages per node, out and in, counted once from a
    ledger (messages per peer with ``per_peer``): ``bytes`` and ``messages`` are each a pair
    (out, in) of arrays with a row per (step, phase) and a column per node that sends or
    receives in it (zero-padded); ``steps`` the rows' steps."""

    def __init__(self, ledger: Ledger, per_peer: bool = False):
        self.per_peer = per_peer
        rows = []
        for (step, _), messages in sorted(ledger.by_phase_step().items()):
            nodes = node_loads(messages, per_peer)
            if nodes:
                rows.append((step, list(nodes.values())))
        width = max((len(counts) for _, counts in rows), default=0)
        self.steps = np.array([s for s, _ in rows], dtype=np.int64)
        columns = np.zeros((len(rows), width, 4))  # bytes out, bytes in, messages out, messages in
        for i, (_, counts) in enumerate(rows):
            columns[i, :len(counts)] = counts
        self.bytes, self.messages = (columns[..., 0], columns[..., 1]), (columns[..., 2], columns[..., 3])


PRESETS: dict[str, NetworkModel] = {
    # Latencies are typical one-way figures for each fabric; bandwidths are link rates.
    "ethernet_10g": NetworkModel("10 Gb/s Ethernet", 10e9 / 8, 50e-6),
    "infiniband_56g": NetworkModel("56 Gb/s InfiniBand FDR", 56e9 / 8, 2e-6),
    "pcie3_x16": NetworkModel("PCIe 3.0 x16 (15.75 GB/s)", 15.75e9, 5e-6),
    "net_10mbs": NetworkModel("10 MB/s network", 10e6, 100e-6),
    # With a cost per message (sources, not measurements here): application-to-application
    # latency of small messages over TCP on 10 GbE, about 20 us (Hurwitz & Feng, "Initial
    # end-to-end performance evaluation of 10-Gigabit Ethernet", HOT Interconnects 2003);
    # MPI's one-way small-message latency on InfiniBand, about 1 us (osu_latency, the OSU
    # micro-benchmarks); EDR is 100 Gb/s, the fabric of EventGraD's cluster (Sec. 7).
    "ethernet_10g_tcp": NetworkModel("10 Gb/s Ethernet, TCP, 20 us per message", 10e9 / 8, 20e-6, 20e-6),
    "infiniband_edr_mpi": NetworkModel("100 Gb/s InfiniBand EDR, MPI, 1 us per message", 100e9 / 8, 1e-6, 1e-6),
}


REGISTERED_BY: set[str] = set()  # modules that registered presets (plugins.registering_modules)
LINK = "link"


def register_network(key: str, model: NetworkModel) -> NetworkModel:
    """Make ``model`` a preset named ``key`` (an identifier not taken by a built-in)."""
    import sys
    if not (isinstance(key, str) and key.isidentifier() and key != LINK) or not isinstance(model, NetworkModel):
        raise ValueError(f"register_network({key!r}, ...): the key must be an identifier other than {LINK!r} "
                         "and the model a NetworkModel")
    PRESETS[key] = model
    REGISTERED_BY.add(sys._getframe(1).f_globals.get("__name__", ""))
    return model


def network_preset(name: str) -> NetworkModel:
    """The network a config names: a preset, or ``link(bandwidth_bytes_per_s=..., latency_s=...,
    message_latency_s=...)``; ``ValueError`` naming what is allowed."""
    if isinstance(name, str) and name in PRESETS:
        return PRESETS[name]
    allowed = (f"network must be one of {sorted(PRESETS)} or {LINK}(bandwidth_bytes_per_s=B, latency_s=L, "
               f"message_latency_s=M, wire_overhead=W, per_peer=True|False, node_messages=True|False), got {name!r}")
    if not (isinstance(name, str) and name.strip().startswith(LINK)):
        raise ValueError(allowed)
    from ..spec_syntax import call_parts, parse
    _, args, values = call_parts(parse(name, "network"), name, "network", {LINK})
    if args or set(values) - {*FIELDS, *SWITCHES} or \
            not {"bandwidth_bytes_per_s", "latency_s"} <= set(values):
        raise ValueError(allowed)
    return NetworkModel(name.strip(), **values)


def canonical_network(name: str) -> str:
    """The form a config stores: a preset's key, or a link spec with sorted float arguments."""
    model = network_preset(name)
    if isinstance(name, str) and name in PRESETS:
        return name
    overhead = (f", wire_overhead={float(model.wire_overhead)!r}" if model.wire_overhead else "") + \
        (", per_peer=True" if model.per_peer else "") + (", node_messages=True" if model.node_messages else "")
    return (f"{LINK}(bandwidth_bytes_per_s={float(model.bandwidth_bytes_per_s)!r}, latency_s={float(model.latency_s)!r}, "
            f"message_latency_s={float(model.message_latency_s)!r}{overhead})")
