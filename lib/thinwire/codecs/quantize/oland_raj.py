"""Oland & Raj 2015, Alg. 1 (weight compression) and Alg. 2 (decompression), per tensor.

``oland_raj(c, m, f, ceiling, coder)`` — Alg. 1 for one layer's weights W:
  3. w_min, w_max = min(W), max(W)
  4. H = entropy of a random fraction ``f`` of W quantized to ``m`` bits (Sec. 3.4)
  5. N = min(ceil(H + c), ceiling): the paper writes N = H + c, but N sets 2^N bins and
     is sent as a bit width, so it must be an integer; we round up, so that ``c`` stays a
     floor, and cap at ``ceiling`` (10 in the paper, Sec. 5.1)
  6. Q = QUANTIZE(W, w_min, w_max, N)            (``bin_quantize.py``: a consistent pair)
  7-9. histogram, Huffman codebook, encode       (``entropy/symbol_coders.py``; ``coder``
       picks Huffman as in the paper, ``raw`` N-bit packing, or ``ans``)
  10. package [E, w_min, w_max, code lengths, N]: a self-contained message
      (``wire/format.py``); the receiver needs nothing else (Alg. 2).

``binquant(bits, coder)`` (``binquant.py``) is the same package with N fixed (Sec. 3.1,
Fig. 1) or chosen by a policy (``policies.EntropyBits``, lines 3-5 apart from the codec).

Each encode reports the ``entropy`` estimate and the ``bits`` chosen in ``state.last``
(``SendStats``), for the figures; the draw of the entropy sample uses the state's generator.
"""

from __future__ import annotations

import math

import torch

from .bin_quantize import check_bits, estimate_entropy
from .binquant import BinQuantize, _check_coder


def entropy_rule(flat: torch.Tensor, lo: float, hi: float, c: int, m: int, f: float, ceiling: int,
                 generator: torch.Generator) -> tuple[int, float]:
    """Alg. 1 lines 4-5: (N, H) with H the entropy estimate of a random fraction ``f`` of
    ``flat`` at ``m`` bits (drawn from ``generator``) and N = min(ceil(H + c), ceiling)."""
    h = estimate_entropy(flat, lo, hi, m, f, generator)
    return bit_width(h, c, ceiling)[0], h


ROUNDINGS = ("ceil", "fractional")
UNITS = ("bits", "nats")


def bit_width(h: float, c: int, ceiling: int, rounding: str = "ceil", unit: str = "bits") -> tuple[int, int | None]:
    """(N, levels) from an entropy estimate ``h`` in bits. ``rounding="ceil"``: Alg. 1 as we
    read it, N = min(ceil(H + c), ceiling) and 2^N levels (``levels`` None). ``"fractional"``:
    the paper's N = H + c taken literally, round(2^min(H + c, ceiling)) levels (at least 2)
    sent as codes of ceil(log2 levels) bits. ``unit="nats"`` uses H in nats (H ln 2), as a
    natural-log implementation of ESTIMATE ENTROPY would."""
    value = h * math.log(2) if unit == "nats" else h
    if rounding == "ceil":
        # the 1e-9 keeps an entropy of exactly k bits (up to float error) at k + c
        return min(ceiling, max(1, math.ceil(value + c - 1e-9))), None
    levels = max(2, round(2.0 ** min(value + c, ceiling)))
    return max(1, (levels - 1).bit_length()), levels


def check_entropy_rule(c, m, f, ceiling) -> None:
    """``ValueError`` for a bad floor ``c``, pre-quantization ``m``, fraction ``f`` or ``ceiling``."""
    check_bits("c", c)
    check_bits("m", m)
    check_bits("ceiling", ceiling)
    if not (isinstance(f, (int, float)) and not isinstance(f, bool) and 0 < f <= 1):
        raise ValueError(f"f={f!r} is not allowed: f must be a fraction in (0, 1]")
    if c > ceiling:
        raise ValueError(f"c={c} is not allowed: the floor c must be <= ceiling={ceiling}")


class OlandRaj(BinQuantize):
    """Entropy-adaptive bit width per tensor and message (Alg. 1), Huffman-coded by default:
    the whole of Alg. 1 in one codec, the rule drawing its sample from the sender state's
    generator. The same rule as a policy, apart from the codec, is ``policies.EntropyBits``
    with ``binquant(bits=0, coder=...)``; both give the same bits for the same seed."""

    name = "oland_raj"
    codec_id = 9

    def __init__(self, c: int = 5, m: int = 4, f: float = 0.03, ceiling: int = 10, coder: str = "huffman"):
        check_entropy_rule(c, m, f, ceiling)
        self.c, self.m, self.f, self.ceiling = c, m, float(f), ceiling
        self.coder = _check_coder(coder)
        self.bits = None

    def params(self) -> dict:
        return {"c": self.c, "m": self.m, "f": self.f, "ceiling": self.ceiling, "coder": self.coder}

    def choose_bits(self, flat, lo, hi, state, key) -> int:
        bits, state.last.entropy = entropy_rule(flat, lo, hi, self.c, self.m, self.f, self.ceiling, state.generator)
        return bits

