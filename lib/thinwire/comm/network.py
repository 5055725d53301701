"""Turning the ledger into seconds on a modelled cluster.

Each agent is a node with one full-duplex link of ``bandwidth_bytes_per_s`` to a
non-blocking switch. In one phase a node sends its outgoing bytes and receives its
incoming bytes at link speed; the phase ends when the busiest link is done:

    phase_seconds = latency_s + max over nodes and directions of
                    (bytes / bandwidth + messages * message_latency_s)

so a parameter server receiving K pushes pays K x the bytes (incast), while a ring or
sharded exchange spreads the load. ``latency_s`` is paid once per phase (one round of a
synchronous exchange); ``message_latency_s`` (default 0) is paid by a node for every
message it sends or receives, so schemes that send fewer messages (EventGraD's events)
gain even when the messages are small. Messages an agent sends to itself cost nothing.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, replace

import numpy as np

from .ledger import Ledger


@dataclass(frozen=True)
class NetworkModel:
    name: str
    bandwidth_bytes_per_s: float
    latency_s: float
    message_latency_s: float = 0.0

    def __post_init__(self):
        for name in ("bandwidth_bytes_per_s", "latency_s", "message_latency_s"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not value >= 0 or \
                    (name == "bandwidth_bytes_per_s" and not value > 0):
                raise ValueError(f"{name}={value!r} is not allowed: it must be a number "
                                 f"{'> 0' if name == 'bandwidth_bytes_per_s' else '>= 0'}")

    def with_message_latency(self, seconds: float) -> NetworkModel:
        return replace(self, message_latency_s=seconds)

    def phase_seconds(self, messages: list[tuple[int, int, int]]) -> float:
        load: dict[tuple[int, str], list[int]] = defaultdict(lambda: [0, 0])  # (node, direction) -> [bytes, messages]
        for sender, receiver, nbytes in messages:
            if sender != receiver:
                for node in ((sender, "out"), (receiver, "in")):
                    load[node][0] += nbytes
                    load[node][1] += 1
        if not load:
            return 0.0
        return self.latency_s + max(b / self.bandwidth_bytes_per_s + m * self.message_latency_s
                                    for b, m in load.values())

    def seconds_per_step(self, ledger: Ledger, steps: int) -> np.ndarray:
        seconds = np.zeros(steps)
        for (step, _), messages in ledger.by_phase_step().items():
            seconds[step] += self.phase_seconds(messages)
        return seconds


PRESETS: dict[str, NetworkModel] = {
    # Latencies are typical one-way figures for each fabric; bandwidths are link rates.
    "ethernet_10g": NetworkModel("10 Gb/s Ethernet", 10e9 / 8, 50e-6),
    "infiniband_56g": NetworkModel("56 Gb/s InfiniBand FDR", 56e9 / 8, 2e-6),
    "pcie3_x16": NetworkModel("PCIe 3.0 x16 (15.75 GB/s)", 15.75e9, 5e-6),
    "net_10mbs": NetworkModel("10 MB/s network", 10e6, 100e-6),
}


def network_preset(name: str) -> NetworkModel:
    if name not in PRESETS:
        raise ValueError(f"network must be one of {sorted(PRESETS)}, got {name!r}")
    return PRESETS[name]
