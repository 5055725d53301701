"""One peer's messages as one uint8 tensor on the transport's device, for messages kept in
tensors (``engine/wire/tensor_message.py``): NCCL then moves them from GPU memory to GPU
memory, and no message crosses to a host.

Layout: the table of ``distributed.frame`` (count, then sender, receiver, name length and
message length per envelope, then the names), zero-padded to 8 bytes, then each message
padded to 8 bytes. The padding lets a received message's parts be viewed in place as
their dtypes (a view needs its offset aligned to its element size; 8 is the largest). The
table is built on the host and read on the host; the messages never leave the device.
The table and padding are transport overhead, not ledgered, as for host frames.
"""

from __future__ import annotations

import struct

import torch

from ..engine import tensor_message
from .envelope import Envelope

ROW = struct.Struct("<iiII")
ALIGN = 8


def _padded(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


def rows(envelopes: list[Envelope], names: list[bytes]) -> bytearray:
    """The count, then one row (sender, receiver, name length, message length) per envelope:
    how every frame, on the host or on a device, begins."""
    out = bytearray(struct.pack("<I", len(envelopes)))
    for e, n in zip(envelopes, names):
        out += ROW.pack(e.sender, e.receiver, len(n), len(e.message))
    return out


def table(envelopes: list[Envelope]) -> bytes:
    """The frame's table: ``rows``, then the names."""
    names = [e.tensor.encode() for e in envelopes]
    return bytes(rows(envelopes, names) + b"".join(names))


def frame(envelopes: list[Envelope], device: torch.device) -> tuple[torch.Tensor, int]:
    """(the frame on ``device``, the length of its table). A host message (``bytearray``) in
    the list is copied to the device."""
    head = table(envelopes)
    pieces = [torch.frombuffer(bytearray(head + bytes(_padded(len(head)) - len(head))), dtype=torch.uint8)
              .to(device, non_blocking=True)]
    for e in envelopes:
        message = e.message if isinstance(e.message, torch.Tensor) else tensor_message.from_host(e.message, device)
        pieces.append(message.to(device))
        if _padded(message.numel()) > message.numel():
            pieces.append(torch.zeros(_padded(message.numel()) - message.numel(), dtype=torch.uint8, device=device))
    return torch.cat(pieces), len(head)


def unframe(received: torch.Tensor, head: bytes) -> list[Envelope]:
    """The envelopes of a received frame, given its table (``head``, copied to the host);
    each message is a view of ``received``."""
    (count,) = struct.unpack_from("<I", head, 0)
    rows = [ROW.unpack_from(head, 4 + i * ROW.size) for i in range(count)]
    at, off, envelopes = 4 + count * ROW.size, _padded(len(head)), []
    for sender, receiver, name_len, msg_len in rows:
        name = head[at:at + name_len].decode()
        at += name_len
        envelopes.append(Envelope(sender, receiver, name, received[off:off + msg_len]))
        off += _padded(msg_len)
    return envelopes
