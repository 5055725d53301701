"""IEEE float16 transmission: half the bytes of float32.

A float32 host tensor is converted by ``engine/kernels/half.py``: a cached piece at a time,
checksummed there on the way into the message (a large one streamed into it, and out of
it into ``out``); other tensors by torch's cast, a GPU tensor on the GPU, so only the
16-bit values cross to the host message and back. A message tensor on a GPU is decoded
into ``out`` there as the device CRC checks it (``triton_halves.crc32c_cast``) inside
``wire.deferred_checks`` (its header is fixed by the tensor: ``steady_parts``). A large host message decoded into a
host ``out`` is opened unverified too: each cached piece of 16-bit values is checksummed
as it is widened (``half.widen``, ``wire.read_host_part``), so the message is read once,
not once to verify it and again to widen it; a damaged message raises
``CorruptMessageError`` with ``out`` set to NaN.
"""

from __future__ import annotations

import numpy as np
import torch

from ..base import Codec
from ..registry import register
from ...engine import (PartWriter, Payload, Unverified, copy_part, expect_part, half, on_device, put,
                       read_host_part)
from ..state import CodecState
from .fp32 import host_float32


def _bits(t: torch.Tensor):
    """The 16-bit floats of ``t`` as a uint16 numpy array (same bytes)."""
    return t.view(-1).view(torch.int16).numpy().view("uint16")


@register
class Float16(Codec):
    """Send every value as IEEE float16 (half the bytes). Values beyond +-65504 become +-Inf."""

    name = "fp16"
    host_only = False
    decodes_on_device = True
    reads_device_messages = True
    carries_non_finite = True
    verifies_while_casting = True
    codec_id = 2
    carrier = "values"
    dtype = torch.float16              # what every value is cast to (bf16.py sets bfloat16)

    def compress(self, flat, state: CodecState, key: str, shape: tuple = ()) -> Payload:
        bf16 = self.dtype == torch.bfloat16
        if host_float32(flat) and half.supported(bf16) and not on_device(flat):
            writer = PartWriter(self.dtype, flat.numel(), lambda view: half.narrow(flat.numpy(), _bits(view), bf16),
                                checksummed=True)
        else:  # cast as it is copied (a GPU message: on the GPU, no 16-bit temporary)
            writer = PartWriter(self.dtype, flat.numel(), lambda view: view.copy_(flat))
        return Payload(parts={"values": writer})

    @property
    def verifies_while_widening(self) -> bool:
        """A large host message is widened into ``out`` as it is checked, a cached piece at a
        time (``half.widen``), where the kernels convert this format."""
        return half.supported(self.dtype == torch.bfloat16)

    def values_per_byte(self) -> float:
        return 0.5

    def steady_parts(self, numel: int, shape: tuple = ()) -> tuple[tuple[str, torch.dtype, int], ...]:
        return (("values", self.dtype, numel),)

    def warm_up(self) -> None:
        super().warm_up()
        if half.supported(self.dtype == torch.bfloat16):
            half.warm_up(self.dtype == torch.bfloat16)  # large tensors' parallel conversions

    def decompress(self, payload: Payload, numel: int, state: CodecState, key: str, out=None, shape: tuple = ()) -> torch.Tensor:
        values = expect_part(payload, "values", self.dtype, numel)
        if isinstance(payload.unverified, Unverified):  # decode left the check to this cast (a message on a GPU)
            target = out if out is not None else torch.empty(numel, dtype=torch.float32, device=values.device)
            copy_part(payload, "values", target)
            return target
        bf16 = self.dtype == torch.bfloat16
        if payload.unverified is not None:  # a large host message and host ``out``: widened as it is checked
            widened = out.view(-1).numpy()
            read_host_part(payload, "values", lambda part: half.widen(part.view(np.uint16), widened, bf16, checksum=True),
                           lambda: widened.view(np.uint8).fill(0xFF))
            return out
        if out is None:
            return values.to(torch.float32)
        if host_float32(out) and half.supported(bf16) and not on_device(out):
            half.widen(_bits(values), out.view(-1).numpy(), bf16)
            return out
        return out.copy_(put(values, out.device))  # on a GPU: the 16-bit values cross, then widen there
