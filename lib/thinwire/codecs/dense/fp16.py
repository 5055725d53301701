"""IEEE float16 transmission: half the bytes of float32."""

from __future__ import annotations

import torch

from ..base import Codec, expect_part
from ..payload import PartWriter, Payload
from ..state import CodecState


class Float16(Codec):
    """Send every value as IEEE float16 (half the bytes). Values beyond +-65504 become +-Inf."""

    name = "fp16"
    host_only = False
    carries_non_finite = True
    codec_id = 2
    carrier = "values"
    dtype = torch.float16              # what every value is cast to (bf16.py sets bfloat16)

    def compress(self, flat, state: CodecState, key: str, shape: tuple = ()) -> Payload:
        # cast straight into the message buffer: no intermediate half-size tensor
        return Payload(parts={"values": PartWriter(self.dtype, flat.numel(), lambda view: view.copy_(flat))})

    def decompress(self, payload: Payload, numel: int, state: CodecState, key: str, out=None, shape: tuple = ()) -> torch.Tensor:
        values = expect_part(payload, "values", self.dtype, numel)
        return values.to(torch.float32) if out is None else out.copy_(values)
