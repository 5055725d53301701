"""One package per paper: published numbers, profiles, recipes, run builders and analysis
helpers, used by the paper's notebook (``notebooks/<paper>.ipynb``).

    quickstart          Plump-DP vs top-k with error feedback vs 8-bit quantization
    slim_dp             Sun et al. 2018, core + explorer subsets with key caching; Quant-DP (QSGD)
    eventgrad           Ghosh et al. 2021, event-triggered ring SGD vs D-PSGD; Top-K events
    oland_raj           Oland & Raj 2015, entropy-adaptive quantization + Huffman coding
    gradient_dropping   Aji & Heafield 2017, sparse communication with a residual
    compare             every method above against DDP's all-reduce and PowerSGD: which pays, when

Each package declares itself with ``PAPER`` (``record.py``); ``PAPERS`` lists the packages
that do, in their order, and ``paper(name)`` gives the record. Each package's README.md
follows one layout: how to use it, suggested hyperparameters, technical details,
deviations from the paper and why, attribution.
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

from .record import Headline, Paper
from .profile import PROFILES, check_profile, check_steps
from .recipe import Recipe


def _registry() -> dict[str, Paper]:
    found = {}
    for module in pkgutil.iter_modules([str(Path(__file__).parent)]):
        if module.ispkg:
            record = getattr(importlib.import_module(f"{__name__}.{module.name}"), "PAPER", None)
            if isinstance(record, Paper):
                if record.name != module.name:
                    raise RuntimeError(f"papers/{module.name}: PAPER.name is {record.name!r}, not the package's name")
                found[record.name] = record
    return dict(sorted(found.items(), key=lambda item: item[1].order))


REGISTRY = _registry()
PAPERS = tuple(REGISTRY)


def paper(name: str) -> Paper:
    if name not in REGISTRY:
        raise ValueError(f"paper={name!r} is not allowed: paper must be one of {list(PAPERS)}")
    return REGISTRY[name]


__all__ = ["PAPERS", "PROFILES", "Headline", "Paper", "Recipe", "check_profile", "check_steps", "paper"]
