"""Oland & Raj 2015, Alg. 1 lines 3-5, as a policy: the bit width of a layer's transmission.

1. w_min, w_max = min(W), max(W)
2. H = entropy of a random fraction ``f`` of W quantized to ``m`` bits (Sec. 3.4), the
   sample drawn from this policy's own generator
3. N = min(ceil(H + c), ceiling): the paper writes N = H + c, but N sets 2^N bins and is
   sent as a bit width, so it must be an integer; we round up, so that ``c`` stays a floor,
   and cap at ``ceiling`` (10 in the paper, Sec. 5.1)
The codec ``binquant(bits=0, coder=...)`` then quantizes to N bits and entropy-codes
(Alg. 1 lines 6-10). The rule lives here only: no codec repeats it.

Two readings of line 3 for the ablations (``bit_width``): ``rounding="fractional"`` keeps
N = H + c fractional (round(2^N) bins, not a power of two) and ``unit="nats"`` takes H in
nats, as MATLAB's natural ``log`` would give it. Both default to the reading above and then
stay out of the spec, so configs that predate them keep their results keys.
"""

from __future__ import annotations

import math

from ..engine import check_bits, estimate_entropy
from ..codecs.quantize.minmax import value_range
from .base import Decision, Policy
from .registry import register

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


READING = {"rounding": "ceil", "unit": "bits"}  # the defaults: Alg. 1 line 5 as the module docstring reads it


@register
class EntropyBits(Policy):
    name = "entropy_bits"

    def __init__(self, c: int = 5, m: int = 4, f: float = 0.03, ceiling: int = 10, rounding: str = "ceil",
                 unit: str = "bits", seed: int = 0):
        check_entropy_rule(c, m, f, ceiling)
        for name, value, allowed in (("rounding", rounding, ROUNDINGS), ("unit", unit, UNITS)):
            if value not in allowed:
                raise ValueError(f"{name}={value!r} is not allowed: {name} must be one of {list(allowed)}")
        super().__init__(seed)
        self.c, self.m, self.f, self.ceiling = c, m, float(f), ceiling
        self.rounding, self.unit = rounding, unit

    def params(self) -> dict:
        readings = {k: v for k, v in (("rounding", self.rounding), ("unit", self.unit)) if v != READING[k]}
        return {"c": self.c, "m": self.m, "f": self.f, "ceiling": self.ceiling, **readings}

    def decide(self, round, key, tensor) -> Decision:
        flat = tensor.detach().reshape(-1).cpu()  # host: the entropy estimate is a numba kernel
        lo, hi = value_range(flat, key)
        h = estimate_entropy(flat, lo, hi, self.m, self.f, self.generator)
        bits, levels = bit_width(h, self.c, self.ceiling, self.rounding, self.unit)
        return Decision(bits=bits, levels=levels, entropy=h)
