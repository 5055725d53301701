"""The base of every algorithm's config section: its own parameters, validated on construction.

``RunConfig`` (``experiment/config.py``) holds the fields every run has (data, model,
workers, steps, device, ...) plus one section, chosen by ``algorithm``. Each section lives
in its algorithm's module (``plump_dp.ParameterServerSection``, ``sharded_ps.ShardedPSSection``,
``slim_dp.SlimDPSection``, ``weight_averaging.WeightAveragingSection``,
``eventgrad.EventGradSection``, ``allreduce_dp.AllReduceSection``), not with a paper:
Plump-DP serves the quickstart and Slim-DP's baselines, the sharded server gradient
dropping, and a new paper adds its own section in its own algorithm module.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..specs import codec_spec
from ..validation import normalize_numbers


@dataclass(frozen=True)
class Section:
    """Base of every section: push and pull codecs, stored in canonical spec form."""

    push_codec: str = "fp32"           # codec spec for worker -> server (or peer) messages
    pull_codec: str = "fp32"           # codec spec for server -> worker messages

    def __post_init__(self):
        normalize_numbers(self)
        for name in ("push_codec", "pull_codec"):
            object.__setattr__(self, name, codec_spec(name, getattr(self, name)))

    def check_common(self, common) -> None:
        """Rules that tie this section to the common fields (``RunConfig``'s ``Common``: a
        ring needs at least three peers); ``ValueError`` naming the parameter. None here."""
