"""The byte layout of a message (wire format v2): a compact binary header, the parts, a
checksum.

    byte 0      0xA2: magic (high nibble 0xA) and format version 2 (low nibble)
    byte 1      codec id (``Codec.codec_id``, fixed per codec class)
    bytes 2-5   digest of the codec's canonical spec (CRC-32C, u32): its parameters
    byte 6      dtype code (high nibble) | number of dimensions (low nibble)
    byte 7      meta entries (high nibble) | parts (low nibble)
    ...         each dimension as an unsigned LEB128 varint
    ...         each meta entry: type (u8), name, value (varint, zigzag varint, f32 or f64)
    ...         each part: name, dtype code (u8), element count (varint)
    ...         each part's little-endian bytes, aligned to its element size (zero padding)
    end-4       CRC-32C of everything before it

A message describes at most ``MAX_NUMEL`` values: a header claiming more is corrupt, so no
decoder allocates for it. A name is one byte per dot-separated token (``NAMES`` index, high bit set when another
token follows): ``values.numel`` costs two bytes. A float meta value that float32 holds
exactly travels as 4 bytes.

``len(message)`` is the byte count on the wire. ``measure`` splits it into **payload**:
the parts' bytes and the meta values (what a paper counts: codes, indices, values,
ranges, code tables), and **framing**: everything else (magic, codec id, digest, dtype,
shape, names, type tags, element counts, padding, checksum). A one-float fp32 message is
20 bytes: 4 of payload, 16 of framing.
"""

from __future__ import annotations

import math
import struct
import time

import numpy as np
import torch

from . import clock
from .buffers import message_buffer
from .checksum import checksum, fill_and_checksum
from ..errors import CorruptMessageError
from ..payload import PartWriter, Payload

MAGIC = 0xA2
MAX_NUMEL = 2**31 - 1  # values one message may describe (int32 indexing; 8 GiB of float32)
FIXED = struct.Struct("<BBIBB")
TRAILER = struct.Struct("<I")
_F32, _F64 = struct.Struct("<f"), struct.Struct("<d")

# Codes are part of the format: append, never reorder.
DTYPES: tuple[torch.dtype, ...] = (
    torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32, torch.int16,
    torch.int8, torch.uint8, torch.bool, torch.uint16, torch.uint32,
)
DTYPE_CODES = {d: i for i, d in enumerate(DTYPES)}
ITEMSIZE = [torch.empty((), dtype=d).element_size() for d in DTYPES]

# Every part and meta name token a codec may use. Append, never reorder.
NAMES: tuple[str, ...] = (
    "values", "index", "codes", "levels", "segments", "offsets", "escapes", "lengths", "stream", "syncs",
    "counts", "words", "lo", "hi", "bits", "first", "sync", "count", "width", "numel", "value", "keys",
    "signature", "norms", "signs", "mask", "branch",
)
NAME_CODES = {n: i for i, n in enumerate(NAMES)}

UVARINT, SVARINT, FLOAT32, FLOAT64 = range(4)

Message = bytearray


def name_bytes(name: str) -> bytes:
    """The encoded form of a dotted name; ``ValueError`` for a token not in ``NAMES``."""
    tokens = name.split(".")
    out = bytearray()
    for i, token in enumerate(tokens):
        code = NAME_CODES.get(token)
        if code is None:
            raise ValueError(f"wire: name token {token!r} (of {name!r}) is not in wire.NAMES; add it there")
        out.append(code | (0x80 if i + 1 < len(tokens) else 0))
    return bytes(out)


def _uvarint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _meta_value(value) -> tuple[int, bytes]:
    if isinstance(value, (bool, np.bool_)):
        value = int(value)
    if isinstance(value, (int, np.integer)):
        value = int(value)
        return (UVARINT, _uvarint(value)) if value >= 0 else (SVARINT, _uvarint(-2 * value - 1))
    if isinstance(value, (float, np.floating)):
        value = float(value)
        as32 = _F32.pack(value) if math.isfinite(value) and abs(value) <= 3.4028234663852886e38 else None
        if as32 is not None and _F32.unpack(as32)[0] == value or math.isnan(value):
            return FLOAT32, _F32.pack(value)
        return FLOAT64, _F64.pack(value)
    raise ValueError(f"wire: meta values must be ints or floats, got {type(value).__name__} {value!r}")


def part_nbytes(part) -> int:
    numel = part.numel if isinstance(part, PartWriter) else part.numel()
    return numel * ITEMSIZE[DTYPE_CODES[part.dtype]]


def plan(dtype: torch.dtype, shape: tuple[int, ...], payload: Payload, codec_id: int, digest: int,
         device_meta: dict[str, int] | None = None):
    """(header bytes, [(name, part)], each part's offset, end of the last part) of a message:
    the layout ``pack`` writes, on the host or into a tensor (``tensor_message.py``).

    ``device_meta`` (a dict, filled here): a meta value may be a float32's 4 bytes in a uint8
    tensor on the message's device (a range found there, never read by the host); its entry
    is laid out as a float32 of zero bytes, and ``device_meta[name]`` is where its 4 bytes
    go. Without it such a value is a ``ValueError``."""
    parts = [(name, t if isinstance(t, PartWriter) else t.detach().contiguous()) for name, t in payload.parts.items()]
    if len(shape) > 15 or len(payload.meta) > 15 or len(parts) > 15:
        raise ValueError(f"wire: at most 15 dimensions, meta entries and parts, got {len(shape)}, "
                         f"{len(payload.meta)}, {len(parts)}")
    head = bytearray(FIXED.pack(MAGIC, codec_id, digest, DTYPE_CODES[dtype] << 4 | len(shape),
                                 len(payload.meta) << 4 | len(parts)))
    for size in shape:
        head += _uvarint(int(size))
    for name, value in payload.meta.items():
        if isinstance(value, torch.Tensor) and device_meta is not None:
            if value.dtype != torch.uint8 or value.numel() != 4:
                raise ValueError(f"wire: device meta {name!r} must be a float32's 4 bytes (uint8), got "
                                 f"{value.dtype} x {value.numel()}")
            kind, raw = FLOAT32, bytes(4)
            device_meta[name] = len(head) + 1 + len(name_bytes(name))
        else:
            kind, raw = _meta_value(value)
        head.append(kind)
        head += name_bytes(name)
        head += raw
    for name, t in parts:
        head += name_bytes(name)
        head.append(DTYPE_CODES[t.dtype])
        head += _uvarint(t.numel if isinstance(t, PartWriter) else t.numel())
    offsets, total = [], len(head)
    for _, t in parts:
        align = ITEMSIZE[DTYPE_CODES[t.dtype]]
        total = -(-total // align) * align
        offsets.append(total)
        total += part_nbytes(t)
    return head, parts, offsets, total


def pack(codec_id: int, digest: int, dtype: torch.dtype, shape: tuple[int, ...], payload: Payload,
         out: bytearray | torch.Tensor | None = None, steady: bool = False) -> Message:
    """Lay ``payload`` out as one checksummed byte buffer: ``out`` (resized to fit; a buffer
    reused from message to message is not allocated and faulted in again), or a new one.
    ``out`` a uint8 tensor: the message is written there, on its device (``tensor_message``;
    ``steady``: the codec's header is fixed by the tensor's shape and dtype)."""
    if isinstance(out, torch.Tensor):
        from . import tensor_message
        return tensor_message.pack(codec_id, digest, dtype, shape, payload, out, steady)
    start, filling = time.perf_counter(), 0.0
    head, parts, offsets, total = plan(dtype, shape, payload, codec_id, digest)
    message = _sized(out, total + TRAILER.size)
    message[:len(head)] = head
    copies, known, written = [], [], len(head)
    for (_, t), off in zip(parts, offsets):
        message[written:off] = bytes(off - written)  # alignment padding: zeros, also in a reused buffer
        nbytes = part_nbytes(t)
        written = off + nbytes
        if not nbytes:
            continue
        if isinstance(t, PartWriter):
            t0 = time.perf_counter()
            part_crc = t.fill(torch.frombuffer(message, dtype=t.dtype, count=t.numel, offset=off))
            filling += time.perf_counter() - t0  # the codec's work: it computes the part into the frame
            if t.checksummed and part_crc is not None:  # the writer checksummed its bytes as it wrote them
                known.append((off, nbytes, part_crc))
        else:
            src = t.view(-1).view(torch.uint8)
            if src.device.type != "cpu":  # from the device straight into the message (checksummed below)
                torch.frombuffer(message, dtype=torch.uint8, count=nbytes, offset=off).copy_(src)
            else:
                copies.append((off, src.numpy()))
    TRAILER.pack_into(message, total, fill_and_checksum(message, total, copies, known))
    clock.add(time.perf_counter() - start - filling)
    return message


def _sized(out: bytearray | None, nbytes: int) -> bytearray:
    """``out`` holding exactly ``nbytes`` (its contents are overwritten), or a new buffer."""
    if out is None:
        return message_buffer(nbytes)
    if not isinstance(out, bytearray):
        raise ValueError(f"out={type(out).__name__} is not allowed: a message is written into a bytearray")
    if len(out) > nbytes:
        del out[nbytes:]
    elif len(out) < nbytes:
        out.extend(bytes(nbytes - len(out)))
    return out


class _Reader:
    """Reads the header fields in order; any overrun is a ``CorruptMessageError``."""

    def __init__(self, buffer, end: int):
        self.buffer, self.pos, self.end = buffer, FIXED.size, end

    def byte(self) -> int:
        if self.pos >= self.end:
            raise CorruptMessageError("header runs past the end of the message")
        self.pos += 1
        return self.buffer[self.pos - 1]

    def uvarint(self) -> int:
        value, shift = 0, 0
        while True:
            byte = self.byte()
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7
            if shift > 63:
                raise CorruptMessageError("varint longer than 64 bits")

    def name(self) -> str:
        tokens = []
        while True:
            byte = self.byte()
            code = byte & 0x7F
            if code >= len(NAMES):
                raise CorruptMessageError(f"unknown name token {code}")
            tokens.append(NAMES[code])
            if not byte & 0x80:
                return ".".join(tokens)

    def raw(self, n: int) -> bytes:
        if self.pos + n > self.end:
            raise CorruptMessageError("header runs past the end of the message")
        self.pos += n
        return bytes(self.buffer[self.pos - n:self.pos])


def read_header(message, end: int):
    """(codec id, digest, dtype, shape, meta, [(name, dtype, numel)], meta value bytes, reader)."""
    if end < FIXED.size:
        raise CorruptMessageError(f"message of {end + TRAILER.size} bytes is shorter than the minimal frame")
    magic, codec_id, digest, dtype_dims, counts = FIXED.unpack_from(message, 0)
    if magic != MAGIC:
        raise CorruptMessageError(f"not a thinwire v2 message (first byte {magic:#04x}, expected {MAGIC:#04x})")
    dtype_code, ndim = dtype_dims >> 4, dtype_dims & 0xF
    if dtype_code >= len(DTYPES):
        raise CorruptMessageError(f"unknown dtype code {dtype_code}")
    reader = _Reader(message, end)
    shape = tuple(reader.uvarint() for _ in range(ndim))
    if math.prod(shape) > MAX_NUMEL:
        raise CorruptMessageError(f"shape {shape} has more than {MAX_NUMEL} values, more than any message may describe")
    meta, meta_bytes = {}, 0
    for _ in range(counts >> 4):
        kind = reader.byte()
        name = reader.name()
        start = reader.pos
        if kind == UVARINT:
            value = reader.uvarint()
        elif kind == SVARINT:
            value = -((reader.uvarint() + 1) // 2)
        elif kind == FLOAT32:
            value = _F32.unpack(reader.raw(4))[0]
        elif kind == FLOAT64:
            value = _F64.unpack(reader.raw(8))[0]
        else:
            raise CorruptMessageError(f"unknown meta type {kind}")
        meta_bytes += reader.pos - start
        if name in meta:
            raise CorruptMessageError(f"meta entry {name!r} appears twice")
        meta[name] = value
    parts = []
    for _ in range(counts & 0xF):
        name = reader.name()
        code = reader.byte()
        if code >= len(DTYPES):
            raise CorruptMessageError(f"part {name!r}: unknown dtype code {code}")
        parts.append((name, DTYPES[code], reader.uvarint()))
    return codec_id, digest, DTYPES[dtype_code], shape, meta, parts, meta_bytes, reader.pos


def layout(parts, start: int, end: int) -> list[int]:
    offsets, off = [], start
    for name, dtype, numel in parts:
        align = ITEMSIZE[DTYPE_CODES[dtype]]
        off = -(-off // align) * align
        offsets.append(off)
        off += numel * align
        if off > end:
            raise CorruptMessageError(f"part {name!r} runs past the end of the message")
    if off != end:
        raise CorruptMessageError(f"{end - off} bytes follow the last part")
    return offsets


def unpack(message, verify: bool = True) -> tuple[dict, Payload]:
    """Check and split a message into its header dict and payload.

    The header dict has ``codec_id``, ``digest``, ``dtype`` and ``shape``. Raises
    ``CorruptMessageError`` for a bad checksum, truncation, extra bytes or a malformed
    header. The parts alias the message buffer (a uint8 tensor's parts are views of it, on
    its device: ``tensor_message``).

    ``verify=False``: the checksum is left to the caller, which copies the payload's parts
    out with ``checked_copy.copy_part`` (``payload.unverified`` holds the message until
    then); the header is still checked as it is read.
    """
    if isinstance(message, torch.Tensor):
        from . import tensor_message
        return tensor_message.unpack(message, verify)
    start = time.perf_counter()
    if not isinstance(message, bytearray):
        message = bytearray(message)
    end = _body_end(message)
    if verify:
        _verify(message, end)
    codec_id, digest, dtype, shape, meta, parts, _, pos = read_header(message, end)
    payload = Payload(meta=meta, unverified=None if verify else message)
    for (name, part_dtype, numel), off in zip(parts, layout(parts, pos, end)):
        if name in payload.parts:
            raise CorruptMessageError(f"part {name!r} appears twice")
        payload.parts[name] = (torch.frombuffer(message, dtype=part_dtype, count=numel, offset=off) if numel
                               else torch.empty(0, dtype=part_dtype))
    clock.add(time.perf_counter() - start)
    return {"codec_id": codec_id, "digest": digest, "dtype": dtype, "shape": shape}, payload


def verify(message) -> None:
    """``CorruptMessageError`` unless a message's checksum matches its trailer (for a
    message opened with ``unpack(verify=False)`` that is refused before its copy)."""
    if isinstance(message, torch.Tensor):
        from . import tensor_message
        return tensor_message.verify(message)
    start = time.perf_counter()
    _verify(message, _body_end(message))
    clock.add(time.perf_counter() - start)


def _body_end(message) -> int:
    """Where a host message's trailer starts; ``CorruptMessageError`` if it is too short."""
    n = len(message)
    if n < FIXED.size + TRAILER.size:
        raise CorruptMessageError(f"message of {n} bytes is shorter than the minimal frame")
    return n - TRAILER.size


def _verify(message, end: int) -> None:
    (stored,) = TRAILER.unpack_from(message, end)
    if checksum(memoryview(message)[:end]) != stored:
        raise CorruptMessageError(f"checksum mismatch in a message of {len(message)} bytes")


def measure(message) -> tuple[int, int]:
    """(payload bytes, framing bytes) of a message, read from its header; the two add up
    to ``len(message)``. The checksum is not verified here (decoding does that)."""
    if isinstance(message, torch.Tensor):
        from . import tensor_message
        return tensor_message.measure(message)
    n = len(message)
    _, _, _, _, _, parts, meta_bytes, _ = read_header(message, n - TRAILER.size)
    payload = payload_nbytes(parts, meta_bytes)
    return payload, n - payload


def payload_nbytes(parts, meta_bytes: int) -> int:
    """The payload bytes a header describes: its meta values and its parts' bytes."""
    return meta_bytes + sum(numel * ITEMSIZE[DTYPE_CODES[dtype]] for _, dtype, numel in parts)
