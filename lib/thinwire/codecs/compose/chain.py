"""Composition: each stage compresses the previous stage's carrier part.

``Chain(TopK(0.01), Quantize(8))`` sends top-k indices as int32 and the kept values as
8-bit codes. Every stage compresses a float tensor, so each stage but the last must carry
float values (``carrier``); a quantizer or bit packer can only come last, which
``Chain`` checks when it is built.
"""

from __future__ import annotations

import torch

from ..base import Codec, plain_decision
from ..registry import register
from ...engine import CorruptMessageError, Payload, team
from ..state import CodecState


KEY_FIELDS = ("keys", "core", "refresh")     # which coordinates: the first stage's
BIT_FIELDS = ("bits", "levels", "entropy")   # how many bits: the later stages'


def _part(decision, names: tuple[str, ...]):
    """The fields ``names`` of ``decision`` (the others unset), or None when it sets none."""
    if decision is None or all(getattr(decision, n, None) in (None, False) for n in names):
        return None
    return plain_decision(**{n: getattr(decision, n) for n in names})


@register
class Chain(Codec):
    name = "chain"
    codec_id = 6

    def __init__(self, *stages: Codec):
        if len(stages) < 2 or not all(isinstance(s, Codec) for s in stages):
            raise ValueError(f"chain: needs at least two codecs, got {stages!r}")
        for stage in stages[:-1]:
            if stage.carrier is None:
                raise ValueError(f"chain: {stage.spec()} has no float part for the next stage to compress "
                                 "(only a last stage may quantize or bit-pack)")
        self.stages = stages
        self.host_only = any(s.host_only for s in stages)
        # a first stage that refuses NaN and Inf in its own first pass refuses them before any
        # stage's state changes: no extra pass over the tensor first
        self.refuses_non_finite = stages[0].refuses_non_finite

    @property
    def carrier(self):  # type: ignore[override]
        return self.stages[-1].carrier

    @property
    def memory(self) -> bool:
        return any(s.memory for s in self.stages)

    def values_per_byte(self) -> float:
        """The first stage's, times what the last stage packs past a bit a value."""
        return self.stages[0].values_per_byte() * max(1.0, self.stages[-1].values_per_byte() / 8.0)

    def spec(self) -> str:
        return f"chain({', '.join(s.spec() for s in self.stages)})"

    def _rest(self) -> Codec:
        rest = self.stages[1:]
        return rest[0] if len(rest) == 1 else Chain(*rest)

    def compress(self, flat, state: CodecState, key: str, shape: tuple = ()) -> Payload:
        return self._compress(flat, state, key, shape, None)

    def compress_decided(self, flat, state: CodecState, key: str, decision, shape: tuple = ()) -> Payload:
        """A decision's keys (what to send) go to the first stage, its bit width (how to write
        the values) to the later stages: ``chain(topk(...), binquant(bits=0))`` takes both."""
        return self._compress(flat, state, key, shape, decision)

    def _compress(self, flat, state: CodecState, key: str, shape, decision) -> Payload:
        first, rest = self.stages[0], self._rest()
        keys, bits = _part(decision, KEY_FIELDS), _part(decision, BIT_FIELDS)
        payload = (first.compress(flat, state, key, shape=shape) if keys is None else
                   first.compress_decided(flat, state, key, keys, shape=shape)).materialize()
        carried = payload.parts.pop(first.carrier)
        payload.meta[f"{first.carrier}.numel"] = carried.numel()
        inner_key, inner_shape = f"{key}/{first.carrier}", (carried.numel(),)
        with team.alone_if_small(carried.numel() * carried.element_size()):  # the k values a sparsifier kept
            payload.merge(first.carrier, rest.compress(carried, state, inner_key, shape=inner_shape) if bits is None
                          else rest.compress_decided(carried, state, inner_key, bits, shape=inner_shape))
        return payload

    def _first_payload(self, payload: Payload, numel: int, state: CodecState, key: str) -> Payload:
        """The first stage's payload, its carrier part rebuilt by the later stages."""
        first = self.stages[0]
        payload = Payload(parts=dict(payload.parts), meta=dict(payload.meta))
        inner = payload.split(first.carrier)
        carried_numel = inner.meta.pop("numel", None)
        if not isinstance(carried_numel, int) or not 0 <= carried_numel <= numel:
            raise CorruptMessageError(f"chain: carried size {carried_numel!r} is not in [0, {numel}]")
        with team.alone_if_small(4 * carried_numel):
            payload.parts[first.carrier] = self._rest().decompress(inner, carried_numel, state, f"{key}/{first.carrier}",
                                                                     shape=(carried_numel,))
        return payload

    def decompress(self, payload: Payload, numel: int, state: CodecState, key: str, out=None, shape: tuple = ()) -> torch.Tensor:
        return self.stages[0].decompress(self._first_payload(payload, numel, state, key), numel, state, key, out=out,
                                         shape=shape)

    def sparse_entries(self, payload: Payload, numel: int, state: CodecState, key: str, shape: tuple = ()):
        return self.stages[0].sparse_entries(self._first_payload(payload, numel, state, key), numel, state, key,
                                             shape=shape)
