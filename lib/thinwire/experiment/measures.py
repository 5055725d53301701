"""The measures every analysis uses, written once, on finished results.

Bytes come from the ledger (network rows: a self-addressed message costs nothing): the
payload a paper counts, the framing around it, and their sum on the wire, per phase or
per sender role, from any step on (``Traffic``). Times: measured compute and codec
seconds (median step after a warm-up times the steps, ``timing.py``), and communication
*priced* on any network model from the run's ledger: pricing is analysis, so one
finished run is priced on every network without training again. From them:
images per second, final accuracy over a window of evaluations, and the modelled time
to reach a target accuracy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..comm import network_preset
from .timing import is_measured, median_after_warmup


@dataclass(frozen=True)
class Traffic:
    """What one phase (or role, or the whole run) sent over the network."""

    bytes: int       # on the wire
    payload: int     # what a paper counts
    messages: int

    @property
    def framing(self) -> int:
        """Headers and checksums: ``bytes - payload``."""
        return self.bytes - self.payload


def traffic(result, prefix: str = "", start: int = 0) -> Traffic:
    """Totals from step ``start`` on of the per-step byte metrics named ``<prefix>bytes``,
    ``<prefix>payload`` and ``<prefix>messages`` (``""`` for the whole run)."""
    m = result.metrics
    payload_key = f"{prefix}payload" if prefix else "payload_bytes"
    missing = [k for k in (f"{prefix}bytes", payload_key, f"{prefix}messages") if k not in m]
    if missing:
        raise KeyError(f"result has no {missing[0]!r}")
    return Traffic(int(np.sum(m[f"{prefix}bytes"][start:])), int(np.sum(m[payload_key][start:])),
                   int(np.sum(m[f"{prefix}messages"][start:])))


def payload(result, phases: tuple[str, ...] | None = None, start: int = 0) -> int:
    """Payload bytes from step ``start`` on, of ``phases`` (every phase by default)."""
    if phases is None:
        return traffic(result, "", start).payload
    return sum(result.phase(p, start).payload for p in phases)


def framing(result, start: int = 0) -> int:
    return traffic(result, "", start).framing


def measured_seconds(result, name: str = "compute_seconds", start: int = 0) -> float:
    """A measured time (``compute_seconds``, ``codec_seconds``, ``worker_select_seconds``,
    ...) for the steps from ``start`` on: their number times the median step after a warm-up."""
    if name not in result.metrics or not is_measured(name):
        measured = sorted(k for k in result.metrics if is_measured(k))
        raise KeyError(f"name={name!r} is not a measured time of this result; it has {measured}")
    return result.seconds(name, start)


def codec_seconds(result, side: str | None = None, part: str | None = None, start: int = 0) -> float:
    """Measured codec seconds: all, or of one ``side`` (``worker``/``server``) and ``part``
    (``select``/``encode``/``decode``/``frame``)."""
    if side is None and part is None:
        return measured_seconds(result, "codec_seconds", start)
    sides = (side,) if side else ("worker", "server")
    if part is None:
        return sum(measured_seconds(result, f"{s}_codec_seconds", start) for s in sides)
    return sum(measured_seconds(result, f"{s}_{part}_seconds", start) for s in sides)


def priced_per_step(result, network: str) -> np.ndarray:
    """Communication seconds of each step on ``network`` (a preset, a registered or a
    ``link(...)`` spec), from the run's ledger."""
    return network_preset(network).seconds_per_step(result.ledger, result.steps)


def priced_seconds(result, network: str, start: int = 0) -> float:
    """Communication seconds from step ``start`` on, priced on ``network``."""
    return float(priced_per_step(result, network)[start:].sum())


def images_per_second(result, network: str | None = None, start: int = 0) -> float:
    """Images / (measured compute + communication priced on ``network``) from step ``start``
    on; without a network, images / measured wall time."""
    images = result.config.workers * result.config.batch_size * (result.steps - start)
    if network is None:
        return images / measured_seconds(result, "wall_seconds", start)
    return images / (measured_seconds(result, "compute_seconds", start) + priced_seconds(result, network, start))


def communication_share(result, network: str, start: int = 0) -> float:
    """Priced communication / (measured compute + priced communication)."""
    comm = priced_seconds(result, network, start)
    return comm / (measured_seconds(result, "compute_seconds", start) + comm)


def final_accuracy(result, evaluations: int = 1) -> float:
    """Mean test accuracy over the last ``evaluations`` evaluations."""
    values = [v for v in result.metrics["test_accuracy"] if v is not None]
    if not values:
        raise ValueError("the result has no test accuracy (no evaluation ran)")
    return float(np.mean(values[-evaluations:]))


def time_to_accuracy(result, target: float, network: str) -> float | None:
    """Modelled seconds (median compute step + each step's priced communication, summed)
    until the first evaluation at or above ``target``; None if none reaches it."""
    compute = median_after_warmup(result.metrics["compute_seconds"])
    elapsed = np.cumsum(compute + priced_per_step(result, network))
    for step, accuracy in enumerate(result.metrics["test_accuracy"]):
        if accuracy is not None and accuracy >= target:
            return float(elapsed[step])
    return None
