"""The byte layout of a message.

    offset 0   b"TW", version (u8), reserved (u8), header length H (u32)
    8          header: UTF-8 JSON {codec spec, dtype, shape, meta, parts}, padded to 8
    8+H'       each part's raw little-endian bytes, each padded to 8
    end-4      checksum (u32) of everything before it

``len(message)`` is the byte count that ledgers and compression ratios use.
"""

from __future__ import annotations

import json
import math
import struct

import numpy as np
import torch

from .checksum import checksum
from .errors import CorruptMessageError
from .payload import PartWriter, Payload

MAGIC = b"TW"
VERSION = 1
_PREFIX = struct.Struct("<2sBBI")
_TRAILER = struct.Struct("<I")

DTYPES: dict[str, torch.dtype] = {
    "float64": torch.float64, "float32": torch.float32, "float16": torch.float16,
    "bfloat16": torch.bfloat16, "int64": torch.int64, "int32": torch.int32,
    "int16": torch.int16, "int8": torch.int8, "uint8": torch.uint8, "bool": torch.bool,
    "uint16": torch.uint16, "uint32": torch.uint32,
}
DTYPE_NAMES = {v: k for k, v in DTYPES.items()}

Message = bytearray


def _pad8(n: int) -> int:
    return (n + 7) & ~7


def _nbytes(part) -> int:
    if isinstance(part, PartWriter):
        return part.numel * torch.empty((), dtype=part.dtype).element_size()
    return part.numel() * part.element_size()


def pack(codec_spec: str, dtype: torch.dtype, shape: tuple[int, ...], payload: Payload) -> Message:
    """Lay ``payload`` out as one checksummed byte buffer."""
    parts = [(name, t if isinstance(t, PartWriter) else t.contiguous()) for name, t in payload.parts.items()]
    header = json.dumps({
        "codec": codec_spec,
        "dtype": DTYPE_NAMES[dtype],
        "shape": list(shape),
        "meta": payload.meta,
        "parts": [[name, DTYPE_NAMES[t.dtype], t.numel if isinstance(t, PartWriter) else t.numel()]
                  for name, t in parts],
    }, separators=(",", ":")).encode()
    header_len = _pad8(len(header))
    offsets, total = [], _PREFIX.size + header_len
    for _, t in parts:
        offsets.append(total)
        total += _pad8(_nbytes(t))
    message = bytearray(total + _TRAILER.size)
    _PREFIX.pack_into(message, 0, MAGIC, VERSION, 0, header_len)
    message[_PREFIX.size:_PREFIX.size + len(header)] = header
    for (_, t), off in zip(parts, offsets):
        if not _nbytes(t):
            continue
        if isinstance(t, PartWriter):
            t.fill(torch.frombuffer(message, dtype=t.dtype, count=t.numel, offset=off))
        else:
            nbytes = _nbytes(t)
            dst = np.frombuffer(message, dtype=np.uint8, count=nbytes, offset=off)
            dst[:] = t.view(-1).view(torch.uint8).numpy()
    view = memoryview(message)
    _TRAILER.pack_into(message, total, checksum(view[:total]))
    return message


def unpack(message) -> tuple[dict, Payload]:
    """Check and split a message into its header dict and payload.

    Raises ``CorruptMessageError`` for a bad checksum, truncation or a malformed header.
    The parts alias the message buffer.
    """
    if not isinstance(message, bytearray):
        message = bytearray(message)
    n = len(message)
    if n < _PREFIX.size + _TRAILER.size:
        raise CorruptMessageError(f"message of {n} bytes is shorter than the minimal frame")
    view = memoryview(message)
    (stored,) = _TRAILER.unpack_from(message, n - _TRAILER.size)
    if checksum(view[:n - _TRAILER.size]) != stored:
        raise CorruptMessageError(f"checksum mismatch in a message of {n} bytes")
    magic, version, _, header_len = _PREFIX.unpack_from(message, 0)
    if magic != MAGIC or version != VERSION:
        raise CorruptMessageError(f"not a thinwire v{VERSION} message (magic {magic!r}, version {version})")
    try:
        raw = bytes(view[_PREFIX.size:_PREFIX.size + header_len]).rstrip(b"\0")
        header = json.loads(raw)
        payload = Payload(meta=dict(header["meta"]))
        off = _PREFIX.size + header_len
        for name, dtype_name, numel in header["parts"]:
            dtype = DTYPES[dtype_name]
            nbytes = numel * torch.empty((), dtype=dtype).element_size()
            if off + nbytes > n - _TRAILER.size:
                raise CorruptMessageError(f"part {name!r} runs past the end of the message")
            if nbytes:
                part = torch.frombuffer(message, dtype=dtype, count=numel, offset=off)
            else:
                part = torch.empty(0, dtype=dtype)
            payload.parts[name] = part
            off += _pad8(nbytes)
        header["dtype"] = DTYPES[header["dtype"]]
        header["shape"] = tuple(int(s) for s in header["shape"])
        if math.prod(header["shape"]) < 0:
            raise CorruptMessageError("negative shape")
    except CorruptMessageError:
        raise
    except (ValueError, KeyError, TypeError) as exc:
        raise CorruptMessageError(f"malformed message header: {exc}") from exc
    return header, payload
