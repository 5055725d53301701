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
one it was fitted on. Measured on 2 cores with 3 workers (star 4 ranks, rings 3), on an AMD
EPYC (Zen 4):

- the fixed cost of a step is not the busiest direction's messages: per step, the star (the
  server takes 3 peers in one phase, sends to 3 in the next) cost 6.2-7.5 ms, the ring
  all-reduce (4 phases, one peer out and one in each) 6.7-7.1 ms, EventGraD's ring (one phase,
  two peers out and two in) 4.0-4.5 ms at 25 MB/s; counted per direction the model had the
  ring at 50 MB/s +19.7% and EventGraD -9.5% in the same run, counted out and in together
  all three come to 0.8-1.3 ms a message;
- a cost per phase beside it came out 0 in five fits of six by least squares, and the sixth
  (1.8 ms per phase, 0.6 per message, the ring's calibration run 1.8x slower than in the
  others) had the ring at 50 MB/s +18%; the median of the three patterns' costs is not
  moved by one slow run, and every bandwidth runs twice (``netcheck(repeats=...)``);
- the measured time of a run is the steps times the median step (``measure.total``): the
  median of each phase apart moved the ring all-reduce at 50 MB/s between 10.3 and 12.9 ms a
  step over four runs, the median step between 14.7 and 15.3 ms over three;
- what it leaves: in the ring all-reduce a message costs more at 50 MB/s (per message over
  four runs: 0.9-1.2 ms at 10 MB/s, 1.1-1.3 at 25, 1.3-1.5 at 50; EventGraD's ring 1.0-1.2,
  1.0-1.2, 1.0-1.4; the star 1.0-1.2 at each), so the model underestimates it there, where
  the fixed costs are two thirds of a step: -13.4, -14.6, -20.1, -4.2 and -5.3% over five
  runs (the star and EventGraD's ring within 8% in all five); with the calibration at twice
  the repeats, -10.8, -12.8, -12.4 and -9.9% over four runs (fitted 0.99-1.12 ms a message),
  every other row of the four, 5 ms delays included, within 10.3%;
- the ring all-reduce pays more a message than the other two at every rate: at 25 MB/s,
  1.27 and 1.23 ms against the star's 1.12 and 1.12 and EventGraD's 1.09 and 1.05 (two runs on
  the AMD EPYC); a cost per phase beside it does not remove that (the star and the ring have
  the same count of size all-gather steps and of messages a step, 6/6 and 8/8, and their costs
  per unit differ by 1.4x at 50 MB/s). What moved the errors most from run to run was the fit
  itself: 0.92 and 1.12 ms a message in two runs of 2 repeats, so the calibration bandwidth
  now runs twice the repeats (``check.CALIBRATION_REPEATS``);
- not the token bucket's burst (1 ms of traffic, which lets a short message of the ring through
  partly at once): with a burst of two frames the ring at 50 MB/s paid 1.7-2.0 ms a message
  and at 10 MB/s 1.1-1.3, a wider spread, not a narrower one;
- most of the cost is the emulation's: a ring all-reduce of 2 ranks, one a core, paid 0.3-0.7
  ms a message at 10, 25 and 50 MB/s (two runs each), the same ring of 3 ranks on the 2 cores
  0.9-1.2 in the same sessions; the fitted cost is that of this machine's 3-4 ranks on 2 cores;
- fitted at 1 GB/s the costs came out too high (on an Intel Xeon, before the above: +49% for
  the ring at 50 MB/s): with 3-4 ranks on 2 cores a rank waits for a core more often when
  transfers are short.
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
