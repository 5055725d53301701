"""Time to a target accuracy on a network of any bandwidth, from one finished run.

A run's ledger is priced on the network model corrected on a shaped network
(``netcheck/fit.py``): each link carries the messages' bytes plus TCP/IP/Ethernet's headers
(``wire_overhead``), each phase costs ``latency_s`` (0 as fitted), and each peer a node sends
to or receives from in a phase costs ``message_latency_s``, out and in added
(``node_messages``). ``link`` writes that network for one bandwidth.

A step's time is built from the run's measured times (``experiment/timing.py``): its
compute (gradients and codec work of one worker, the simulated workers running in parallel)
and, inside it, its codec time, both less the workbench's framing and checksum of the
messages (``frame_seconds``, measured apart: no peer system pays it). The median of each is taken over the steps that communicate
and over those that do not, apart, so a method that exchanges once an epoch (Oland & Raj)
pays its codec work on those steps. Two schedules:

- ``sequential``: compute, then communicate (thinwire's algorithms, and every paper here);
- ``overlap``: communication overlaps the backward pass, as DDP's buckets do, taken as 2/3 of
  the gradient work (a backward pass costs about twice a forward); the codec work does not
  overlap: step = forward + max(backward, communication) + codec.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...comm import PRESETS, TCP_ETHERNET, NetworkModel, PhaseLoads

SCHEDULES = ("sequential", "overlap")
BACKWARD_SHARE = 2 / 3


@dataclass(frozen=True)
class FixedCosts:
    """The network model's corrections: per phase, per message (per peer, out and in added), headers."""

    latency_s: float = 0.0
    message_latency_s: float = 0.0
    wire_overhead: float = TCP_ETHERNET
    source: str = "headers only"

    def link(self, bandwidth_bytes_per_s: float) -> NetworkModel:
        return NetworkModel(f"{bandwidth_bytes_per_s / 1e6:g} MB/s", bandwidth_bytes_per_s, self.latency_s,
                            self.message_latency_s, self.wire_overhead, per_peer=True, node_messages=True)


def cited(preset: str) -> FixedCosts:
    """The fixed costs of a network preset whose per-message latency has a published source
    (``comm/network.py`` names it): ``"ethernet_10g_tcp"``, 20 us per message over TCP, the
    comparison's headline; ``"infiniband_edr_mpi"``, 1 us per message; TCP/IP/Ethernet's
    headers on both. This machine's fitted costs (``netcheck``) are mostly its emulation's (3-4
    ranks on 2 cores): a labelled variant, not the headline."""
    model = PRESETS[preset]
    return FixedCosts(model.latency_s, model.message_latency_s, source=f"{model.name} (cited)")


def ranks_of(result) -> int:
    """One rank per agent: the agents in the run's ledger."""
    columns = result.ledger.columns
    return int(max(max(columns["sender"], default=0), max(columns["receiver"], default=0))) + 1


class StepTimes:
    """One run's per-step compute, codec and (priced) communication times. The workbench's
    framing and checksum (``frame_seconds``, measured inside the codec time) is left out of
    both unless ``framing``: no peer system pays it (DDP sends a tensor's own bytes);
    ``frame`` keeps it per step."""

    def __init__(self, result, warmup: int = 5, framing: bool = False):
        self.result, self.steps = result, result.steps
        self.loads = PhaseLoads(result.ledger, per_peer=True)
        self.ranks = ranks_of(result)
        talks = np.zeros(self.steps, dtype=bool)
        talks[np.unique(self.loads.steps)] = True
        compute = self._median_by_class(result.metrics["compute_seconds"], talks, warmup)
        codec = np.minimum(self._median_by_class(result.metrics["codec_seconds"], talks, warmup), compute)
        frames = result.metrics.get("frame_seconds") or [0.0] * self.steps  # runs from before it was measured: 0
        self.frame = np.minimum(self._median_by_class(frames, talks, warmup), codec)
        left_out = 0.0 if framing else self.frame
        self.compute, self.codec = compute - left_out, codec - left_out
        self.accuracy = result.metrics["test_accuracy"]

    def _median_by_class(self, values, talks: np.ndarray, warmup: int) -> np.ndarray:
        values = np.asarray(values[:self.steps], dtype=float)
        out = np.empty(self.steps)
        for cls in (True, False):
            chosen = talks.copy() if cls else ~talks
            later = chosen.copy()
            later[:warmup] = False
            pool = values[later] if later.any() else values[chosen]
            out[chosen] = np.median(pool) if len(pool) else 0.0
        return out

    def comm(self, costs: FixedCosts, bandwidth: float) -> np.ndarray:
        return costs.link(bandwidth).price(self.loads, self.steps)

    def step_seconds(self, costs: FixedCosts, bandwidth: float, schedule: str,
                     gradient_s: float | None = None) -> np.ndarray:
        """Each step's modelled seconds; ``gradient_s``: a gradient computation of that many
        seconds a step in place of the measured one (the codec work stays as measured), for
        a reader whose model or accelerator computes faster or slower (``time_map``)."""
        if schedule not in SCHEDULES:
            raise ValueError(f"schedule={schedule!r} is not allowed: it must be one of {list(SCHEDULES)}")
        comm = self.comm(costs, bandwidth)
        if schedule == "sequential" and gradient_s is None:
            return self.compute + comm
        gradient = self.compute - self.codec if gradient_s is None else np.full(self.steps, float(gradient_s))
        if schedule == "sequential":
            return gradient + self.codec + comm
        backward = BACKWARD_SHARE * gradient
        return gradient - backward + np.maximum(backward, comm) + self.codec

    def steps_to(self, target: float) -> int | None:
        """Steps until the first evaluation at or above ``target`` (None if none)."""
        for step, accuracy in enumerate(self.accuracy[:self.steps]):
            if accuracy is not None and accuracy >= target:
                return step + 1
        return None

    def time_to(self, target: float, costs: FixedCosts, bandwidth: float, schedule: str,
                gradient_s: float | None = None) -> float:
        """Modelled seconds until the first evaluation at or above ``target``; inf if none."""
        steps = self.steps_to(target)
        if steps is None:
            return float("inf")
        return float(self.step_seconds(costs, bandwidth, schedule, gradient_s)[:steps].sum())


def crossover(bandwidths, method: np.ndarray, baseline: np.ndarray, margin: float = 0.01) -> float | None:
    """Where ``method`` stops paying: scanning up from the lowest bandwidth, the first point
    where its time is no longer below ``baseline``'s by ``margin`` (1%: the bf16 all-reduce,
    the fp16 one's bytes, is not "faster" by its codec's 0.03 ms a step), placed between grid
    points on log axes (where the log of their ratio crosses log(1 - margin)). ``inf`` when it
    pays on the whole grid, ``None`` when it does not pay at the lowest bandwidth (it may still
    pay higher up, where fewer phases or peers save fixed costs; ``mean_seconds`` shows that)."""
    b = np.log(np.asarray(bandwidths, dtype=float))
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.log(np.asarray(method, dtype=float) / np.asarray(baseline, dtype=float)) - np.log(1.0 - margin)
    pays = r < 0
    if not pays[0]:
        return None
    if pays.all():
        return float("inf")
    stop = int(np.argmin(pays))  # the first grid point where it does not pay
    r0, r1 = r[stop - 1], r[stop]
    if not (np.isfinite(r0) and np.isfinite(r1)):
        return float(np.exp(b[stop - 1]))
    return float(np.exp(b[stop - 1] + (b[stop] - b[stop - 1]) * r0 / (r0 - r1)))
