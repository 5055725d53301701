"""Oland & Raj 2015, Alg. 1 (weight compression) and Alg. 2 (decompression), per tensor.

``oland_raj(c, m, f, ceiling, coder)`` — Alg. 1 for one layer's weights W:
  3. w_min, w_max = min(W), max(W)
  4. H = entropy of a random fraction ``f`` of W quantized to ``m`` bits (Sec. 3.4)
  5. N = min(ceil(H + c), ceiling): the paper writes N = H + c, but N sets 2^N bins and
     is sent as a bit width, so it must be an integer; we round up, so that ``c`` stays a
     floor, and cap at ``ceiling`` (10 in the paper, Sec. 5.1)
  6. Q = QUANTIZE(W, w_min, w_max, N)            (``bin_quantize.py``: a consistent pair)
  7-9. histogram, Huffman codebook, encode       (``symbol_coders.py``; ``coder`` picks
       Huffman as in the paper, ``raw`` N-bit packing, or ``ans``)
  10. package [E, w_min, w_max, code lengths, N]: a self-contained message
      (``wire.py``); the receiver needs nothing else (Alg. 2).

``binquant(bits, coder)`` is the fixed-width quantizer of Sec. 3.1 (Fig. 1), the same
package with N fixed.

Each encode reports the ``entropy`` estimate and the ``bits`` chosen in ``state.last``
(``SendStats``), for the figures; the draw of the entropy sample uses the state's generator.
"""

from __future__ import annotations

import math

import torch

from .base import Codec
from .bin_quantize import bin_centres, bin_codes, bin_pack, check_bits, estimate_entropy, histogram
from .errors import CorruptMessageError
from .payload import Payload
from .quantize import value_range
from .state import CodecState
from .symbol_coders import CODERS


def _check_coder(coder) -> str:
    if coder not in CODERS:
        raise ValueError(f"coder={coder!r} is not allowed: coder must be one of {sorted(CODERS)}")
    return coder


def entropy_rule(flat: torch.Tensor, lo: float, hi: float, c: int, m: int, f: float, ceiling: int,
                 generator: torch.Generator) -> tuple[int, float]:
    """Alg. 1 lines 4-5: (N, H) with H the entropy estimate of a random fraction ``f`` of
    ``flat`` at ``m`` bits (drawn from ``generator``) and N = min(ceil(H + c), ceiling)."""
    h = estimate_entropy(flat, lo, hi, m, f, generator)
    # the 1e-9 keeps an entropy of exactly k bits (up to float error) at k + c
    return min(ceiling, max(1, math.ceil(h + c - 1e-9))), h


def check_entropy_rule(c, m, f, ceiling) -> None:
    """``ValueError`` for a bad floor ``c``, pre-quantization ``m``, fraction ``f`` or ``ceiling``."""
    check_bits("c", c)
    check_bits("m", m)
    check_bits("ceiling", ceiling)
    if not (isinstance(f, (int, float)) and not isinstance(f, bool) and 0 < f <= 1):
        raise ValueError(f"f={f!r} is not allowed: f must be a fraction in (0, 1]")
    if c > ceiling:
        raise ValueError(f"c={c} is not allowed: the floor c must be <= ceiling={ceiling}")


class BinQuantize(Codec):
    """N-bit bin quantization (Sec. 3.1) + an entropy coder. ``bits=0``: N comes with each
    encode from a policy's decision (``policies.EntropyBits``, MQGrad's agent); every
    message carries its N, so the receiver needs nothing else."""

    name = "binquant"
    codec_id = 8

    def __init__(self, bits: int = 8, coder: str = "raw"):
        self.bits = 0 if bits == 0 and not isinstance(bits, bool) else check_bits("bits", bits)
        self.coder = _check_coder(coder)

    def params(self) -> dict:
        return {"bits": self.bits, "coder": self.coder}

    def choose_bits(self, flat: torch.Tensor, lo: float, hi: float, state: CodecState, key: str) -> int:
        if not self.bits:
            raise ValueError(f"{self.spec()} takes its bit width from a policy decision: "
                             "encode(..., decision=Decision(bits=N))")
        return self.bits

    def compress(self, flat, state: CodecState, key: str) -> Payload:
        lo, hi = value_range(flat, key)
        return self._quantize(flat, lo, hi, self.choose_bits(flat, lo, hi, state, key), state)

    def compress_decided(self, flat, state: CodecState, key: str, decision) -> Payload:
        if decision.keys is not None or decision.bits is None:
            return super().compress_decided(flat, state, key, decision)
        if self.bits and decision.bits != self.bits:
            raise ValueError(f"{self.spec()} sends {self.bits} bits; a decision of {decision.bits} needs bits=0")
        lo, hi = value_range(flat, key)
        return self._quantize(flat, lo, hi, check_bits("bits", decision.bits), state)

    def _quantize(self, flat, lo: float, hi: float, bits: int, state: CodecState) -> Payload:
        state.last.bits = bits
        if self.coder == "raw":  # QUANTIZE fused with the raw coder's packing (same part)
            parts, meta = {"codes": bin_pack(flat, lo, hi, bits)}, {}
        else:
            codes = bin_codes(flat, lo, hi, bits)
            parts, meta = CODERS[self.coder]().encode(codes, bits, histogram(codes, bits))
        return Payload(parts=parts, meta={"lo": lo, "hi": hi, "bits": bits, **meta})

    def decompress(self, payload: Payload, numel: int, state: CodecState, key: str, out=None) -> torch.Tensor:
        lo, hi, bits = float(payload.meta["lo"]), float(payload.meta["hi"]), int(payload.meta["bits"])
        if not (math.isfinite(lo) and math.isfinite(hi) and lo <= hi and 1 <= bits <= 16):
            raise CorruptMessageError(f"{self.name}: bad range [{lo}, {hi}] or bits {bits}")
        codes = CODERS[self.coder]().decode(payload.parts, payload.meta, numel, bits)
        if codes.size and int(codes.max()) >= 1 << bits:
            raise CorruptMessageError(f"{self.name}: code {int(codes.max())} out of range for {bits} bits")
        return bin_centres(codes, lo, hi, bits, out=out)


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

