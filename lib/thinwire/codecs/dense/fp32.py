"""Plain float32 transmission (Plump-DP's uncompressed messages)."""

from __future__ import annotations

import torch

from ..base import Codec, expect_part
from ..payload import Payload
from ..state import CodecState


class Float32(Codec):
    """Send every value as float32: the reference every compression ratio divides by.

    NaN and Inf pass through unchanged (bit-exact round trip).
    """

    name = "fp32"
    host_only = False
    carries_non_finite = True
    codec_id = 1
    carrier = "values"

    def compress(self, flat, state: CodecState, key: str, shape: tuple = ()) -> Payload:
        return Payload(parts={"values": flat.to(torch.float32)})

    def decompress(self, payload: Payload, numel: int, state: CodecState, key: str, out=None, shape: tuple = ()) -> torch.Tensor:
        values = expect_part(payload, "values", torch.float32, numel)
        return values.clone() if out is None else out.copy_(values)
