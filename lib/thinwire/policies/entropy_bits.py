"""Oland & Raj 2015, Alg. 1 lines 3-5, as a policy: the bit width of a layer's transmission.

1. w_min, w_max = min(W), max(W)
2. H = entropy of a random fraction ``f`` of W quantized to ``m`` bits (Sec. 3.4), the
   sample drawn from this policy's own generator
3. N = min(ceil(H + c), ceiling): the paper writes N = H + c, but N sets 2^N bins and is
   sent as a bit width, so it must be an integer; we round up, so that ``c`` stays a floor,
   and cap at ``ceiling`` (10 in the paper, Sec. 5.1)
The codec ``binquant(bits=0, coder=...)`` then quantizes to N bits and entropy-codes.
"""

from __future__ import annotations

from ..codecs.quantize.oland_raj import check_entropy_rule, entropy_rule
from ..codecs.quantize.minmax import value_range
from .base import Decision, Policy


class EntropyBits(Policy):
    name = "entropy_bits"

    def __init__(self, c: int = 5, m: int = 4, f: float = 0.03, ceiling: int = 10, seed: int = 0):
        check_entropy_rule(c, m, f, ceiling)
        super().__init__(seed)
        self.c, self.m, self.f, self.ceiling = c, m, float(f), ceiling

    def params(self) -> dict:
        return {"c": self.c, "m": self.m, "f": self.f, "ceiling": self.ceiling}

    def decide(self, round, key, tensor) -> Decision:
        flat = tensor.detach().reshape(-1).cpu()  # host: the entropy estimate is a numba kernel
        lo, hi = value_range(flat, key)
        bits, h = entropy_rule(flat, lo, hi, self.c, self.m, self.f, self.ceiling, self.generator)
        return Decision(bits=bits, entropy=h)
