"""What one encode reports: the typed statistics channel from codecs and policies to metrics.

``Codec.encode`` leaves a fresh ``SendStats`` in ``state.last`` and each stage fills the
fields that apply (a sparsifier ``kept`` and ``tied``, a quantizer ``bits`` and
``entropy``). A policy that decides not to send reports ``sent=False``. Algorithms add
these to a per-phase ``Tally`` (``algorithms/report.py``); nothing travels in string slots.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class SendStats:
    values: int = 0                  # entries of the tensor offered for sending
    kept: int | None = None          # entries actually sent (sparsifiers); None: all of them
    tied: int | None = None          # entries equal to the drop threshold (gradient dropping)
    bits: float | None = None        # bit width used (quantizers, bit-width policies; log2 levels when fractional)
    entropy: float | None = None     # entropy estimate behind ``bits`` (Oland & Raj)
    sent: bool = True                # False when a policy decided to send nothing
    select_seconds: float = 0.0      # the part of the encode spent choosing what to send (top-k, drop thresholds)
