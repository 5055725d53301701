"""The network model's fixed costs, fitted on a shaped network.

On a real network an exchange costs more than its bytes over the link: torch.distributed's
transport (``comm/distributed.py``) first all-gathers the frame sizes, a small collective;
gloo sends a frame to a peer only once the peer has posted its receive (a round trip); and
one thread per host handles every frame it sends or receives (gloo's TCP transport runs one
epoll loop per device for all its pairs, gloo/transport/tcp/loop.h). The model prices that
as ``message_latency_s`` per peer a node sends to or receives from in a phase, out and in
added (``per_peer``, ``node_messages``, ``comm/network.py``); the bytes travel with
TCP/IP/Ethernet's headers (``wire_overhead`` = ``TCP_ETHERNET``).

A link's delay is not fitted but counted: an exchange of ``ranks`` ranks pays
``exchange_delays(ranks)`` one-way delays (below).

``fit_fixed_costs`` takes ``measure.total`` rows (one a topology, from runs at one
bandwidth) and returns the median over them of

    (measured - bytes time) / messages

the cost of one message in each pattern. ``netcheck`` checks it on other bandwidths than the
one it was fitted on.

What the fit was measured to capture and to leave (2 cores, 3 workers) is in this
package's README, section "What the fitted cost holds".
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..comm import TCP_ETHERNET, NetworkModel


def fit_fixed_costs(rows: list[dict]) -> tuple[float, float]:
    """(latency_s, message_latency_s) from ``measure.total`` rows whose model had the wire
    overhead and no fixed costs: no cost per phase, and the median over the rows of each
    one's cost per message (held at 0 where the bytes alone took longer)."""
    costs = [(r["measured_s"] - r["bytes_s"]) / r["messages"] for r in rows if r["steps"] and r["messages"]]
    if not costs:
        raise ValueError("fit_fixed_costs needs at least one row with measured exchanges and messages")
    return 0.0, max(0.0, float(np.median(costs)))


def exchange_delays(ranks: int) -> int:
    """One-way delays one exchange of the torch.distributed transport pays among ``ranks``
    ranks: its size all-gather is gloo's ring (``ranks - 1`` steps, gloo/allgather.cc), and in
    each step a rank's send waits for its right neighbour's "receive ready" notification
    before the data goes (two one-way delays); the exchange's frames wait for the same
    notification (two more). 2 x ranks in all.

    Measured with the cluster's delay lines (3 workers, 30 steps, one run each), one-way delays
    per phase beyond the bytes and the per-message costs fitted without a delay, at 2 and 5 ms
    and 10 and 50 MB/s: star (4 ranks, so 8) 6.9-7.3; ring all-reduce (3 ranks, 6) 5.5-7.1;
    EventGraD's ring (6) 5.6-5.8: fewer than counted for the star (why is not tested), more in
    the ring all-reduce at 50 MB/s (6.6-6.9 over four more runs). Not TCP's slow start after an idle spell: with it off
    (``net.ipv4.tcp_slow_start_after_idle=0`` in every node) the same runs paid 6.6-6.9."""
    return 2 * ranks


def shaped(rate: float, delay_s: float = 0.0, ranks: int = 1) -> NetworkModel:
    """The model of a shaped link before any fit: the link's rate, frames' headers, and its
    one-way delay ``delay_s`` paid ``exchange_delays(ranks)`` times a phase."""
    return NetworkModel(f"shaped {rate:g} B/s", rate, exchange_delays(ranks) * delay_s, wire_overhead=TCP_ETHERNET,
                        per_peer=True, node_messages=True)


def corrected(model: NetworkModel, latency_s: float, message_latency_s: float) -> NetworkModel:
    """``model`` with the fitted fixed costs."""
    return replace(model, name=model.name + ", fitted fixed costs", latency_s=model.latency_s + latency_s,
                   message_latency_s=message_latency_s, per_peer=True, node_messages=True)
