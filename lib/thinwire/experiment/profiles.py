"""Profiles: how big each notebook's runs are.

smoke   — seconds; CI executes the notebooks at this size.
default — minutes on a 2-core CPU with the embedded data (``make reproduce``).
paper   — the paper's model and scale, for a GPU machine.
"""

from __future__ import annotations

PROFILES = ("smoke", "default", "paper")

QUICKSTART = {
    "smoke": dict(hidden=(64,), steps=40, train_samples=4096, eval_every=10, eval_samples=1000),
    "default": dict(hidden=(1024, 1024), steps=600, train_samples=0, eval_every=50, eval_samples=10000),
    "paper": dict(hidden=(1024, 1024), steps=9360, train_samples=0, eval_every=468, eval_samples=10000),
}


def check_profile(profile: str) -> str:
    if profile not in PROFILES:
        raise ValueError(f"profile={profile!r} is not allowed: profile must be one of {list(PROFILES)}")
    return profile

GRADIENT_DROPPING = {
    "smoke": dict(hidden=(64, 64, 64), steps=30, train_samples=4096, eval_every=10, eval_samples=1000,
                  speed_steps=10),
    "default": dict(hidden=(512, 512, 512), steps=450, train_samples=0, eval_every=45, eval_samples=10000,
                    speed_steps=40),
    "paper": dict(hidden=(4096, 4096, 4096), steps=7500, train_samples=0, eval_every=375, eval_samples=10000,
                  speed_steps=300),
}
