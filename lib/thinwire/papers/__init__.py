"""One package per paper: published numbers, profiles, run builders and analysis helpers,
used by the paper's notebook (``notebooks/<paper>.ipynb``).

    quickstart          Plump-DP vs top-k with error feedback vs 8-bit quantization
    gradient_dropping   Aji & Heafield 2017, sparse communication with a residual
    oland_raj           Oland & Raj 2015, entropy-adaptive quantization + Huffman coding
    slim_dp             Sun et al. 2018, core + explorer subsets with key caching; Quant-DP (QSGD)

Each package's README.md follows one layout: how to use it, suggested hyperparameters,
technical details, deviations from the paper and why, attribution.
"""

from .profile import PROFILES, check_profile, check_steps

PAPERS = ("quickstart", "gradient_dropping", "oland_raj", "slim_dp")

__all__ = ["PAPERS", "PROFILES", "check_profile", "check_steps"]
