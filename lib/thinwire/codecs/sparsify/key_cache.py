"""Key caching (Li et al. 2014's key caching filter, as Slim-DP uses it: Sun et al. 2018,
Sec. 3.4.1): a sparse message whose core keys are cached on both ends.

A policy (``core_explorer``) decides the core and the explorer; this codec writes them:
1. on a refresh (``decision.refresh``, or no cache yet), the sender caches the core's keys
   and the message carries them (``keys``, int32) with their signature (CRC-32C);
2. every message carries the core's values, in cached-key order, then the explorer's
   values (``values``, float32), the explorer's keys (``index``, int32) and the signature
   of the core keys it refers to;
3. the receiver caches the keys of a refresh message after checking its signature; on any
   other message it checks the signature against its cache and raises
   ``CorruptMessageError`` when they differ or when it holds no cache, so values never
   land on the wrong coordinates.
Between refreshes a message is (alpha - epsilon) n core values + epsilon n (key, value)
pairs: (alpha + epsilon) n words, against 2 alpha n without the cache and n dense. A
refresh adds (alpha - epsilon) n keys, which the paper leaves out of its count.
The message is sparse: ``merge`` overwrites only the core and explorer coordinates.
"""

from __future__ import annotations

import torch

from ..base import Codec
from ..registry import register
from ...engine import CorruptMessageError, Payload, checksum, expect_part
from ..state import CodecState


def signature(keys: torch.Tensor) -> int:
    """CRC-32C of the int32 keys' bytes."""
    keys = keys.to(device="cpu", dtype=torch.int32).contiguous()
    return checksum(memoryview(keys.numpy()).cast("B")) if keys.numel() else 0


@register
class KeyCache(Codec):
    name = "keycache"
    codec_id = 11
    host_only = False
    carrier = None

    def compress(self, flat, state: CodecState, key: str, shape: tuple = ()) -> Payload:
        raise ValueError("keycache sends the keys a policy chose: encode with a Decision carrying the core and "
                         "explorer keys (policy core_explorer)")

    def compress_decided(self, flat, state: CodecState, key: str, decision, shape: tuple = ()) -> Payload:
        if decision.core is None:
            raise ValueError("keycache: the decision carries no core keys (policy core_explorer)")
        n = flat.numel()
        if n >= 2**31:
            raise ValueError(f"keycache: tensor of {n} entries exceeds int32 keys")
        slot = state.slot(key)
        explorer = decision.keys if decision.keys is not None else torch.empty(0, dtype=torch.int64)
        explorer = explorer.to(device=flat.device, dtype=torch.int64)
        parts = {}
        if decision.refresh or "core" not in slot:
            core = decision.core.to(device=flat.device, dtype=torch.int64)
            slot["core"] = core
            slot["signature"] = torch.tensor(signature(core))
            parts["keys"] = core.to(torch.int32)
        elif decision.core.numel() != slot["core"].numel():
            raise ValueError(f"keycache: the decision's core ({decision.core.numel()} keys) is not the cached one "
                             f"({slot['core'].numel()} keys) and refresh is False")
        core = slot["core"]
        values = torch.cat([flat[core], flat[explorer]]).to(torch.float32)
        state.last.kept = core.numel() + explorer.numel()
        parts.update({"values": values, "index": explorer.to(torch.int32)})
        return Payload(parts=parts, meta={"signature": int(slot["signature"])})

    def warm_up(self) -> None:
        """Nothing compiled here (the explorer's sampler belongs to the policy)."""

    def values_per_byte(self) -> float:
        """None beyond ``DECODE_FLOOR``: the policy's core and explorer, not the codec, set how
        many values a message carries (Slim-DP's receivers merge into their own tensors)."""
        return 0.0

    def sparse_entries(self, payload: Payload, numel: int, state: CodecState, key: str, shape: tuple = ()):
        sig = payload.meta.get("signature")
        if not isinstance(sig, int):
            raise CorruptMessageError("keycache: the message has no key signature")
        slot = state.slot(key)
        if "keys" in payload.parts:
            keys = expect_part(payload, "keys", torch.int32)
            if signature(keys) != sig:
                raise CorruptMessageError("keycache: the refreshed keys do not match their signature")
            if keys.numel() and (int(keys.min()) < 0 or int(keys.max()) >= numel):
                raise CorruptMessageError(f"keycache: a core key is out of range for {numel} values")
            core = keys.long()
        else:
            if "core" not in slot:
                raise CorruptMessageError(f"keycache: a message for {key!r} refers to cached keys (signature "
                                          f"{sig:#010x}) but this receiver has none: a refresh was lost")
            if int(slot["signature"]) != sig:
                raise CorruptMessageError(f"keycache: the message's keys (signature {sig:#010x}) are not the ones "
                                          f"cached for {key!r} (signature {int(slot['signature']):#010x})")
            core = slot["core"]
        explorer = expect_part(payload, "index", torch.int32).long()
        values = expect_part(payload, "values", torch.float32, core.numel() + explorer.numel())
        if explorer.numel() and (int(explorer.min()) < 0 or int(explorer.max()) >= numel):
            raise CorruptMessageError(f"keycache: an explorer key is out of range for {numel} values")
        if "keys" in payload.parts:  # checked: cache it
            slot["core"], slot["signature"] = core, torch.tensor(sig)
        return torch.cat([core.to(explorer.device), explorer]), values

    def decompress(self, payload: Payload, numel: int, state: CodecState, key: str, out=None, shape: tuple = ()) -> torch.Tensor:
        index, values = self.sparse_entries(payload, numel, state, key, shape=shape)
        out = torch.zeros(numel, dtype=torch.float32) if out is None else out.zero_()
        out[index] = values
        return out
