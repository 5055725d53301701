"""Profiles: how big each notebook's runs are.

smoke   — seconds; CI executes the notebooks at this size.
default — minutes on a 2-core CPU with the embedded data (``make reproduce``).
paper   — the paper's model and scale, for a GPU machine.

Each paper package holds its own sizes in ``profiles.py``; this module names the levels.
"""

from __future__ import annotations

PROFILES = ("smoke", "default", "paper")


def check_profile(profile: str) -> str:
    if profile not in PROFILES:
        raise ValueError(f"profile={profile!r} is not allowed: profile must be one of {list(PROFILES)}")
    return profile


def check_steps(steps) -> int:
    """A run-length cap (``steps`` notebook parameter): 0 keeps the profile's length."""
    if not isinstance(steps, int) or isinstance(steps, bool) or steps < 0:
        raise ValueError(f"steps={steps!r} is not allowed: steps must be 0 (the profile's) or a positive int cap")
    return steps
