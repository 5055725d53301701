"""Can the paper's own numbers hold together? (Sec. 5.1-5.2: c=5 gives 6.8 raw and 3.55
Huffman bits per parameter; c=6 gives 3.78 Huffman bits, only 0.23 more.)

Raising c by one doubles the bins of every layer below the ceiling. A bin whose weights
are spread inside it splits in two and adds about one bit to each of its weights; only
weights piled on a point (a spike) stay in one bin. So an increment of 0.23 bits needs about
77% of the weights in bins that do not split. Huffman spends at least one bit on any symbol,
and the rest of the weights would then need more bits than N to reach 3.55.

``spike_family`` checks the argument with real Huffman codes (``codecs/entropy``): weights
with a share ``q`` piled at 0 and the rest from a smooth density, quantized over [min, max]
at N and N + 1 bits as Alg. 1 does. It reports the Huffman rate at N, the increment, and
their entropies, for each q and density.
"""

from __future__ import annotations

import numpy as np
import torch

from ...engine import bin_codes, code_lengths, entropy_bits

DENSITIES = ("gaussian", "laplace")


def _rate(weights: torch.Tensor, bits: int) -> tuple[float, float]:
    """(Huffman bits per weight, entropy in bits) of ``weights`` quantized to ``bits`` bits."""
    lo, hi = float(weights.min()), float(weights.max())
    counts = np.bincount(bin_codes(weights, lo, hi, bits), minlength=1 << bits)
    lengths = code_lengths(counts)
    return float((counts * lengths).sum() / counts.sum()), entropy_bits(counts)


def spike_family(bits: int = 7, shares=(0.0, 0.2, 0.4, 0.5, 0.6, 0.7, 0.77, 0.85, 0.9), n: int = 300_000,
                 seed: int = 0):
    """One row per (density, spike share q): Huffman rate and entropy at ``bits`` and the
    increments at ``bits + 1``. ``n`` weights (layer 1 of 784-392-50-10 holds 307,328)."""
    import pandas as pd
    rng = np.random.default_rng(seed)
    rows = []
    for density in DENSITIES:
        smooth = rng.standard_normal(n) if density == "gaussian" else rng.laplace(size=n)
        for q in shares:
            w = smooth.copy()
            w[: int(round(q * n))] = 0.0
            weights = torch.from_numpy(w.astype(np.float32))
            (r, h), (r1, h1) = _rate(weights, bits), _rate(weights, bits + 1)
            rows.append({"density": density, "spike share q": q, f"Huffman bits at N={bits}": r,
                         "Huffman increment": r1 - r, f"entropy at N={bits}": h, "entropy increment": h1 - h})
    return pd.DataFrame(rows).set_index(["density", "spike share q"])


def closest_to_paper(family, bits: int, huffman_c5: float, increment: float):
    """The row of ``spike_family`` nearest the paper's (Huffman bits at c=5, c=6 - c=5), in
    the larger of the two relative distances."""
    rate, step = family[f"Huffman bits at N={bits}"], family["Huffman increment"]
    distance = np.maximum(abs(rate - huffman_c5) / huffman_c5, abs(step - increment) / increment)
    return family.loc[distance.idxmin()], float(distance.min())
