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

    @property
    def carrier(self):  # type: ignore[override]
        return self.inner.carrier

    @property
    def memory(self) -> bool:
        return True

    def spec(self) -> str:
        return f"ef({self.inner.spec()})"

    def compress(self, flat, state: CodecState, key: str) -> Payload:
        slot = state.slot(key)
        residual = slot.get("residual")
        corrected = flat.to(torch.float32) if residual is None else flat + residual
        payload = self.inner.compress(corrected, state, key).materialize()
        view = Payload(parts=dict(payload.parts), meta=dict(payload.meta))
        slot["residual"] = corrected - self.inner.decompress(view, corrected.numel(), state, key)
        return payload

    def decompress(self, payload: Payload, numel: int, state: CodecState, key: str, out=None) -> torch.Tensor:
        return self.inner.decompress(payload, numel, state, key, out=out)

    def sparse_entries(self, payload: Payload, numel: int, state: CodecState, key: str):
        return self.inner.sparse_entries(payload, numel, state, key)

    def residual(self, state: CodecState, key: str) -> torch.Tensor | None:
        return state.slot(key).get("residual")
