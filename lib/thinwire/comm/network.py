"""Turning the ledger into seconds on a modelled cluster.

Each agent is a node with one full-duplex link of ``bandwidth_bytes_per_s`` to a
non-blocking switch. In one phase a node sends its outgoing bytes and receives its
incoming bytes at link speed; the phase ends when the busiest link is done:

    phase_seconds = latency_s + max over nodes of max(bytes_out, bytes_in) / bandwidth

so a parameter server receiving K pushes pays K x the bytes (incast), while a ring or
sharded exchange spreads the load. Messages an agent sends to itself cost nothing.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from .ledger import Ledger


@dataclass(frozen=True)
class NetworkModel:
    name: str
    bandwidth_bytes_per_s: float
    latency_s: float

    def phase_seconds(self, messages: list[tuple[int, int, int]]) -> float:
        out_bytes: dict[int, int] = defaultdict(int)
        in_bytes: dict[int, int] = defaultdict(int)
        for sender, receiver, nbytes in messages:
            if sender != receiver:
                out_bytes[sender] += nbytes
                in_bytes[receiver] += nbytes
        if not out_bytes:
            return 0.0
        busiest = max(max(out_bytes.values()), max(in_bytes.values()))
        return self.latency_s + busiest / self.bandwidth_bytes_per_s

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
