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

# Oland & Raj: the paper trains 100 epochs, ~1500 runs in all and 50 per setting of Fig. 4.
OLAND_RAJ = {
    "smoke": dict(train_samples=2000, epochs=2, eval_samples=1000, seeds=(0,), sweep_seeds=(0,),
                  fixed_bits=(2, 8), floors_ceiling10=(6,), floors_m4=(5, 6), l1_ablation=(1e-3,)),
    "default": dict(train_samples=30000, epochs=8, eval_samples=10000, seeds=(0, 1, 2), sweep_seeds=(0, 1),
                    fixed_bits=(2, 3, 4, 6, 8, 10, 16), floors_ceiling10=(2, 4, 6, 8),
                    floors_m4=(2, 3, 4, 5, 6), l1_ablation=(1e-4, 3e-4, 1e-3)),
    "paper": dict(train_samples=0, epochs=100, eval_samples=10000, seeds=tuple(range(50)),
                  sweep_seeds=tuple(range(50)), fixed_bits=tuple(range(2, 17)),
                  floors_ceiling10=(2, 3, 4, 5, 6, 7, 8, 9), floors_m4=(2, 3, 4, 5, 6),
                  l1_ablation=(1e-4, 3e-4, 1e-3)),
}
