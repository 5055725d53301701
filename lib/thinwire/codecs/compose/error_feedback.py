"""Error feedback (memory): what a lossy codec drops is added to the next message.

Seide et al. (2014) for 1-bit SGD; Aji & Heafield (2017), Alg. 1, call it the residual:
1. corrected = x + residual[key]
2. payload   = inner.compress(corrected)
3. residual[key] = corrected - inner.decompress(payload)   (what the receiver did not get)
so ``x + old residual == decoded + new residual``: nothing is lost, only delayed.
The residual lives in the sender's ``CodecState``; the receiver needs no state.
"""

from __future__ import annotations

import torch

from ..base import Codec
from ..payload import Payload
from ..state import CodecState


class ErrorFeedback(Codec):
    name = "ef"
    codec_id = 5

    def __init__(self, inner: Codec):
        if not isinstance(inner, Codec):
            raise ValueError(f"ef: inner must be a Codec, got {inner!r}")
        self.inner = inner
        self.host_only = inner.host_only
        self.decodes_on_device = inner.decodes_on_device
        self.reads_device_messages = inner.reads_device_messages

    @property
    def carrier(self):  # type: ignore[override]
        return self.inner.carrier

    @property
    def memory(self) -> bool:
        return True

    def spec(self) -> str:
        return f"ef({self.inner.spec()})"

    def compress(self, flat, state: CodecState, key: str, shape: tuple = ()) -> Payload:
        return self._corrected_payload(flat, state, key, shape, None)

    def compress_decided(self, flat, state: CodecState, key: str, decision, shape: tuple = ()) -> Payload:
        """Steps 1-3 with the inner codec's decided compress (a policy's bit width or keys)."""
        return self._corrected_payload(flat, state, key, shape, decision)

    def _corrected_payload(self, flat, state: CodecState, key: str, shape, decision) -> Payload:
        slot = state.slot(key)
        residual = slot.get("residual")
        corrected = flat.to(torch.float32) if residual is None else flat + residual     # 1.
        payload = (self.inner.compress(corrected, state, key, shape=shape) if decision is None else
                   self.inner.compress_decided(corrected, state, key, decision, shape=shape)).materialize()  # 2.
        view = Payload(parts=dict(payload.parts), meta=dict(payload.meta))
        slot["residual"] = corrected - self.inner.decompress(view, corrected.numel(), state, key, shape=shape)  # 3.
        return payload

    def decompress(self, payload: Payload, numel: int, state: CodecState, key: str, out=None, shape: tuple = ()) -> torch.Tensor:
        return self.inner.decompress(payload, numel, state, key, out=out, shape=shape)

    def sparse_entries(self, payload: Payload, numel: int, state: CodecState, key: str, shape: tuple = ()):
        return self.inner.sparse_entries(payload, numel, state, key, shape=shape)

    def residual(self, state: CodecState, key: str) -> torch.Tensor | None:
        return state.slot(key).get("residual")
