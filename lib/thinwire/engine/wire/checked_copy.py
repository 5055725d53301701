"""One large part of a host message copied out while the message's checksum is verified,
in one pass over the message.

``format.unpack`` verifies a message's CRC-32C before any part is read, so decoding a
message of one large part (fp32's values) reads it twice: once to verify it, once to copy
the part out. A codec that copies such a part asks ``Codec.decode`` to open the message
unverified (``Codec.checks_own_copy``) and copies it with ``copy_part``:

1. the part is streamed into ``dst`` a cached piece at a time, each piece's CRC computed
   while it is in the cache (``kernels/stream.py``);
2. that CRC is joined with those of the bytes before and after the part (the header, any
   padding: ``checksum._around``) into the CRC of the message body;
3. the body's CRC is compared with the trailer. On a mismatch ``dst`` is overwritten with
   0xFF bytes (NaN as float32) before ``CorruptMessageError`` is raised, so no value of a
   damaged message stays in the caller's buffer.

A message tensor on a GPU (``tensor_message.py``) takes the same protocol inside
``wire.deferred_checks``: the part is copied out and checksummed there
(``triton_crc.crc32c_copy``), and the CRC of the header before it is folded in as a
constant.
"""

from __future__ import annotations

import numpy as np
import torch

from ..errors import CorruptMessageError
from ..kernels import crc as compiled
from ..kernels import stream
from ..payload import Payload
from .checksum import _around
from . import tensor_message
from .format import TRAILER, verify


def worth_it(nbytes: int) -> bool:
    """Whether ``copy_part`` verifies a part of ``nbytes`` as it copies it (a large part on a
    CPU with the CRC instruction); a codec opens a message unverified only then."""
    return compiled.HARDWARE and stream.worth_streaming(nbytes)


def settle(payload: Payload) -> None:
    """Verify the message of a payload opened unverified, now (``CorruptMessageError`` if it
    is damaged), for a codec that reads it some other way this time."""
    message = payload.unverified
    if message is None:
        return
    if isinstance(message, tensor_message.Unverified):
        tensor_message.verify(message.message)
    else:
        verify(message)
    payload.unverified = None


def read_part(payload: Payload, name: str, read, spoil, checksums: bool = True, later: bool = False) -> None:
    """``tensor_message.read_part``: part ``name`` of an unverified message tensor read by
    ``read`` as the message's checksum is computed, in one pass where it can be."""
    if not isinstance(payload.unverified, tensor_message.Unverified):
        raise ValueError(f"payload part {name!r}: read_part takes an unverified message tensor")
    tensor_message.read_part(payload, name, read, spoil, checksums, later)


def copy_part(payload: Payload, name: str, dst: np.ndarray | torch.Tensor) -> None:
    """``dst[:] =`` the bytes of ``payload``'s part ``name`` (a view of the unverified
    message ``payload.unverified``), verifying the message's checksum in the same pass;
    ``payload.unverified`` is None afterwards. ``CorruptMessageError`` (``dst`` all 0xFF)
    when the checksum does not match. ``dst``: bytes (uint8) in host memory for a host
    message; a uint8 tensor on the message's device for a message tensor
    (``tensor_message.copy_part``)."""
    message = payload.unverified
    if message is None:
        raise ValueError(f"payload part {name!r}: the message was verified already, copy it plainly")
    if isinstance(message, tensor_message.Unverified):
        return tensor_message.copy_part(payload, name, dst)
    if isinstance(dst, torch.Tensor):
        dst = dst.numpy()
    message, end, offset, nbytes = _locate(payload, name)
    if dst.size != nbytes:
        raise ValueError(f"copy_part: part {name!r} holds {nbytes} bytes, but dst holds {dst.size} bytes")
    if worth_it(nbytes):
        read_host_part(payload, name, lambda part: stream.copy(part, dst, checksum=True), lambda: dst.fill(0xFF))
    else:  # not streamed: the body is verified first, then copied
        _judge(payload, end, [], lambda: dst.fill(0xFF))
        np.copyto(dst, np.frombuffer(message, dtype=np.uint8)[offset:offset + nbytes])


def read_host_part(payload: Payload, name: str, read, spoil) -> None:
    """Part ``name`` of an unverified host message read by ``read(part)`` (its bytes,
    uint8), which returns their CRC-32C, taken while each piece is in the cache (``fp16``
    widens as it checks), and the message verified with it, in one pass over the part;
    ``payload.unverified`` is None afterwards. On a mismatch ``spoil()`` overwrites what
    was read into before ``CorruptMessageError`` is raised. Only where ``worth_it``."""
    message, end, offset, nbytes = _locate(payload, name)
    body = np.frombuffer(message, dtype=np.uint8)
    _judge(payload, end, [(offset, nbytes, read(body[offset:offset + nbytes]))], spoil)


def _locate(payload: Payload, name: str) -> tuple[bytes, int, int, int]:
    """(the unverified host message, where its body ends, the part's offset and bytes)."""
    message = payload.unverified
    if message is None or isinstance(message, tensor_message.Unverified):
        raise ValueError(f"payload part {name!r}: not a host message opened unverified")
    part = payload.parts[name]
    body = np.frombuffer(message, dtype=np.uint8)
    end = body.size - TRAILER.size
    offset = part.data_ptr() - body.ctypes.data if part.numel() else 0
    nbytes = part.numel() * part.element_size()
    if not 0 <= offset <= offset + nbytes <= end:
        raise ValueError(f"part {name!r} ({nbytes} bytes at {offset}) is not within the message body of {end} bytes")
    return message, end, offset, nbytes


def _judge(payload: Payload, end: int, regions: list[tuple[int, int, int]], spoil) -> None:
    """The message's body CRC from ``regions`` (offset, bytes, their CRC) and the bytes
    around them, against its trailer; ``payload.unverified`` cleared. On a mismatch
    ``spoil()``, then ``CorruptMessageError``."""
    message = payload.unverified
    (stored,) = TRAILER.unpack_from(message, end)
    computed = _around(message, end, regions)
    payload.unverified = None
    if computed != stored:
        spoil()
        raise CorruptMessageError(f"checksum mismatch in a message of {end + TRAILER.size} bytes")
