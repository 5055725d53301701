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
from ..registry import register
from ...engine import Payload
from ..state import CodecState


@register
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
        # an inner codec that refuses NaN and Inf in its own first pass refuses them in the
        # corrected tensor, before step 3 touches the residual: no extra pass over x first
        self.refuses_non_finite = inner.refuses_non_finite

    @property
    def carrier(self):  # type: ignore[override]
        return self.inner.carrier

    @property
    def memory(self) -> bool:
        return True

    def values_per_byte(self) -> float:
        return self.inner.values_per_byte()

    def spec(self) -> str:
        return f"ef({self.inner.spec()})"

    def compress(self, flat, state: CodecState, key: str, shape: tuple = ()) -> Payload:
        return self._corrected_payload(flat, state, key, shape, None)

    def compress_decided(self, flat, state: CodecState, key: str, decision, shape: tuple = ()) -> Payload:
        """Steps 1-3 with the inner codec's decided compress (a policy's bit width or keys)."""
        return self._corrected_payload(flat, state, key, shape, decision)

    def _corrected_payload(self, flat, state: CodecState, key: str, shape, decision) -> Payload:
        """Steps 1-3. With an inner codec that keeps no memory of its own, in two buffers kept
        in the sender's scratch, not three fresh tensors per message: step 1 writes the
        corrected tensor into the spare buffer (the residual before last), step 2's message is
        decoded into the other, and step 3 subtracts that in place, so the corrected tensor's
        buffer becomes the residual. Where a part of the message is the corrected tensor
        itself (a dense inner codec), step 3 writes a new tensor instead: the part must stay
        as sent. An inner codec with memory (gradient dropping's residual) shares this key's
        slot and keeps buffers of it, so there every step writes a new tensor. Where the
        inner codec subtracts its own decode in place (``subtract_decoded``: top-k, whose
        decode is zero but at its k indices), step 3 writes only those entries, and no
        decode buffer is kept."""
        reuse = not self.inner.memory
        residual = state.slots.get(key, {}).get("residual")  # the slot is made only in step 3
        if residual is None:  # a copy where step 3 writes in place: never the caller's tensor
            corrected = flat.to(torch.float32, copy=reuse)                                     # 1.
        elif reuse:
            corrected = torch.add(flat, residual, out=_buffer(state, ("ef.spare", key), residual))  # 1.
        else:
            corrected = flat + residual                                                        # 1.
        payload = (self.inner.compress(corrected, state, key, shape=shape) if decision is None else
                   self.inner.compress_decided(corrected, state, key, decision, shape=shape)).materialize()  # 2.
        view = Payload(parts=dict(payload.parts), meta=dict(payload.meta))
        if reuse and not _shares(payload, corrected) and self.inner.subtract_decoded(
                view, corrected.numel(), corrected, state, key, shape=shape):                    # 3.
            state.slot(key)["residual"] = corrected
            if residual is not None:
                state.scratch[("ef.spare", key)] = residual
            return payload
        out = _buffer(state, ("ef.decoded", key), corrected) if reuse else None
        decoded = self.inner.decompress(view, corrected.numel(), state, key, out=out, shape=shape)
        if not reuse or _shares(payload, corrected):
            state.slot(key)["residual"] = corrected - decoded                                  # 3.
        else:
            state.slot(key)["residual"] = corrected.sub_(decoded)                              # 3.
            if residual is not None:  # the old residual: the next message's step 1 writes it
                state.scratch[("ef.spare", key)] = residual
        return payload

    def decompress(self, payload: Payload, numel: int, state: CodecState, key: str, out=None, shape: tuple = ()) -> torch.Tensor:
        return self.inner.decompress(payload, numel, state, key, out=out, shape=shape)

    def sparse_entries(self, payload: Payload, numel: int, state: CodecState, key: str, shape: tuple = ()):
        return self.inner.sparse_entries(payload, numel, state, key, shape=shape)

    def residual(self, state: CodecState, key: str) -> torch.Tensor | None:
        return state.slot(key).get("residual")


def _buffer(state: CodecState, name, like: torch.Tensor) -> torch.Tensor:
    """The float32 buffer of ``like``'s size and device kept in ``state.scratch[name]``."""
    buffer = state.scratch.get(name)
    if buffer is None or buffer.numel() != like.numel() or buffer.device != like.device:
        buffer = state.scratch[name] = torch.empty(like.numel(), dtype=torch.float32, device=like.device)
    return buffer


def _shares(payload: Payload, tensor: torch.Tensor) -> bool:
    """Whether a part of ``payload`` lies in ``tensor``'s memory."""
    where = tensor.untyped_storage().data_ptr()
    return any(isinstance(part, torch.Tensor) and part.untyped_storage().data_ptr() == where
               for part in payload.parts.values())
