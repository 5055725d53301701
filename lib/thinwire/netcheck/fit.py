"""The network model's fixed costs, fitted on a shaped network.

On a real network an exchange costs more than its bytes over the link: torch.distributed's
transport (``comm/distributed.py``) first all-gathers the frame sizes, a small collective,
and gloo sends a frame to a peer only once the peer has posted its receive (a round trip);
every frame is posted and completed by gloo and the kernel. The model has a term for each:
``latency_s`` once per phase, ``message_latency_s`` per peer at the busiest node
(``per_peer``, ``comm/network.py``); the bytes travel with TCP/IP/Ethernet's headers
(``wire_overhead`` = ``TCP_ETHERNET``).

``fit_fixed_costs`` takes the per-phase rows ``measure.compare`` made at one bandwidth and
solves

    measured - bytes time = latency_s * phases + message_latency_s * peers

by least squares with both costs >= 0 (``corrected`` puts them in the model). ``netcheck``
checks the fit on other bandwidths than the one it was fitted on. Measured on 2 cores with 3
workers (star 4 ranks, rings 3), errors at 10 and 50 MB/s (star / ring all-reduce /
EventGraD ring):

- fitted at 1 GB/s: +5.3 / +19.5 / -1.0% and +27.6 / +49.3 / +9.3%: the fixed costs come
  out too high (1.9 ms per peer), since with 3-4 ranks on 2 cores a rank waits for a core
  more often when transfers are short;
- fitted at 25 MB/s (the default): +1.9 / +6.7 / -4.3% and +8.5 / +1.3 / -12.8% in one run,
  +0.7 / +6.9 / -4.3% and +2.8 / -10.6 / -10.8% in another; a cost per phase per rank after
  the first instead of one per phase (the size all-gather's ring has ranks - 1 steps) fitted
  the second run worse (ring at 50 MB/s -16.5%), so the model has one per phase.

The EventGraD ring, where every node sends to and receives from two peers at once, is the
one the model underestimates at 50 MB/s: gloo alone, 3 nodes each sending 203 kB to both
others, took 9.6 ms against 8.5 ms of frames, one peer each 4.8 against 4.25; and its size
all-gather took 2.0 ms after the last rank arrived, against 0.8 ms before a ring hop.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..comm import TCP_ETHERNET, NetworkModel


def fit_fixed_costs(phase_rows: list[dict]) -> tuple[float, float]:
    """(latency_s, message_latency_s) from ``compare`` rows whose model had the wire overhead
    and no fixed costs; a cost the data drive below zero is held at zero and the other refitted."""
    rows = [r for r in phase_rows if r["steps"]]
    if not rows:
        raise ValueError("fit_fixed_costs needs at least one phase with measured steps")
    a = np.array([[r["steps"], r["messages"]] for r in rows], dtype=float)
    y = np.array([r["measured_s"] - r["bytes_s"] for r in rows])
    best = None
    for keep in ((0, 1), (0,), (1,)):
        coef = np.zeros(2)
        coef[list(keep)] = np.linalg.lstsq(a[:, keep], y, rcond=None)[0]
        if (coef >= 0).all():
            residual = float(np.sum((a @ coef - y) ** 2))
            if best is None or residual < best[0]:
                best = (residual, coef)
    coef = best[1] if best is not None else np.zeros(2)
    return float(coef[0]), float(coef[1])


def shaped(rate: float, delay_s: float = 0.0) -> NetworkModel:
    """The model of a shaped link before any fit: the link's rate and delay, frames' headers."""
    return NetworkModel(f"shaped {rate:g} B/s", rate, delay_s, wire_overhead=TCP_ETHERNET, per_peer=True)


def corrected(model: NetworkModel, latency_s: float, message_latency_s: float) -> NetworkModel:
    """``model`` with the fitted fixed costs."""
    return replace(model, name=model.name + ", fitted fixed costs", latency_s=model.latency_s + latency_s,
                   message_latency_s=message_latency_s, per_peer=True)
