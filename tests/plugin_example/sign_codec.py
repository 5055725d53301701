"""A plug-in codec (the README's example): each value's sign, and the mean magnitude. Part and
meta names come from the wire format's name table (`thinwire.engine.wire.NAMES`)."""

import torch

from thinwire.codecs import Codec, Payload, register
from thinwire.engine import expect_part


@register
class Sign(Codec):
    name, codec_id, host_only = "sign", 200, False

    def compress(self, flat, state, key, shape=()):
        signs = torch.cat([flat >= 0, torch.zeros(-flat.numel() % 8, dtype=torch.bool)]).view(-1, 8)
        packed = (signs.to(torch.uint8) << torch.arange(8, dtype=torch.uint8)).sum(1, dtype=torch.uint8)
        return Payload(parts={"signs": packed}, meta={"value": float(flat.abs().mean()) if flat.numel() else 0.0})

    def decompress(self, payload, numel, state, key, out=None, shape=()):
        packed = expect_part(payload, "signs", torch.uint8, (numel + 7) // 8)
        bits = (packed.unsqueeze(1) >> torch.arange(8, dtype=torch.uint8)) & 1
        values = (bits.view(-1)[:numel].to(torch.float32) * 2 - 1) * payload.meta["value"]
        return values if out is None else out.copy_(values)
