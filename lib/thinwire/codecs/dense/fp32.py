"""Plain float32 transmission (Plump-DP's uncompressed messages).

A large float32 host tensor is copied into the message and out of it by
``engine/kernels/stream.py``: over the kernels' threads, with streamed stores, and on the way in
checksummed a cached piece at a time, both ways, so a message is read once to be
written and once to be decoded:

- encode: the CRC of each piece is taken from the cache as it is copied in;
- decode into a large host ``out``: the message is opened unverified
  (``Codec.checks_own_copy``) and ``wire.copy_part`` verifies it as it copies the values
  out. A damaged message raises ``CorruptMessageError`` with ``out`` set to NaN.

On a GPU a message tensor is written on the device and checksummed there
(``triton_crc``), and verified before any value is read. Its header is fixed by the tensor
(``steady_parts``): inside ``wire.deferred_checks`` a message tensor is decoded into
``out`` on its device (``tensor_message.copy_part``: the values copied out, then
checksummed), with no read of the header and the check at the block's end.
"""

from __future__ import annotations

import torch

from ..base import Codec
from ..registry import register
from ...engine import PartWriter, Payload, copy_part, expect_part, on_device, stream
from ..state import CodecState


def _bytes(t: torch.Tensor):
    return t.view(-1).view(torch.uint8).numpy()


def host_float32(t: torch.Tensor) -> bool:
    """Whether the compiled kernels handle ``t``: contiguous float32 in host memory."""
    return t.dtype == torch.float32 and t.device.type == "cpu" and t.is_contiguous()


@register
class Float32(Codec):
    """Send every value as float32: the reference every compression ratio divides by.

    NaN and Inf pass through unchanged (bit-exact round trip).
    """

    name = "fp32"
    host_only = False
    decodes_on_device = True
    reads_device_messages = True
    carries_non_finite = True
    verifies_while_copying = True
    codec_id = 1
    carrier = "values"

    def compress(self, flat, state: CodecState, key: str, shape: tuple = ()) -> Payload:
        if not host_float32(flat) or on_device(flat):  # a plain part: on a GPU, copied as it is checksummed
            return Payload(parts={"values": flat.to(torch.float32)})
        return Payload(parts={"values": PartWriter(torch.float32, flat.numel(),
                                                   lambda view: stream.copy(_bytes(flat), _bytes(view), checksum=True),
                                                   checksummed=True)})

    def values_per_byte(self) -> float:
        return 0.25

    def steady_parts(self, numel: int, shape: tuple = ()) -> tuple[tuple[str, torch.dtype, int], ...]:
        return (("values", torch.float32, numel),)

    def warm_up(self) -> None:
        super().warm_up()
        stream.warm_up()  # large tensors' copy

    def decompress(self, payload: Payload, numel: int, state: CodecState, key: str, out=None, shape: tuple = ()) -> torch.Tensor:
        values = expect_part(payload, "values", torch.float32, numel)
        if payload.unverified is not None:  # decode left the check to this copy
            target = out if out is not None else torch.empty(numel, dtype=torch.float32, device=values.device)
            copy_part(payload, "values", target.view(-1).view(torch.uint8))
            return target
        if out is None:
            return values.clone()
        if host_float32(out) and numel and not on_device(out):
            stream.copy(_bytes(values), _bytes(out))
            return out
        return out.copy_(values)
