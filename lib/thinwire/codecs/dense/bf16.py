"""bfloat16 transmission: half the bytes of float32, float32's exponent range.

The 16-bit baseline beside fp16 (``torch.distributed``'s ``bf16_compress_hook``): each
value is rounded to bfloat16 (8 bits of mantissa, round to nearest even), so nothing
overflows that float32 can hold, at about 3 significant digits.
"""

from __future__ import annotations

import torch

from ..base import Codec, expect_part
from ..payload import PartWriter, Payload
from ..state import CodecState


class BFloat16(Codec):
    """Send every value as bfloat16. NaN and Inf pass through."""

    name = "bf16"
    host_only = False
    carries_non_finite = True
    codec_id = 14
    carrier = "values"

    def compress(self, flat, state: CodecState, key: str, shape: tuple = ()) -> Payload:
        return Payload(parts={"values": PartWriter(torch.bfloat16, flat.numel(), lambda view: view.copy_(flat))})

    def decompress(self, payload: Payload, numel: int, state: CodecState, key: str, out=None, shape: tuple = ()) -> torch.Tensor:
        values = expect_part(payload, "values", torch.bfloat16, numel)
        return values.to(torch.float32) if out is None else out.copy_(values)
