"""Messages kept in a uint8 tensor on any device: the same bytes as a host message
(``format.py``), written and checked where the tensor lives, so that a message made on a
GPU from a GPU tensor never crosses to the host to be framed, checksummed, sent (NCCL
moves device buffers) or decoded.

Writing (``pack``): the header is made on the host, as for a host message (it is a few
bytes: ``format.plan``), and copied in; each part is written into its slice of the tensor,
viewed as the part's dtype (parts are aligned to their element size, so the view is
exact), by the part's ``PartWriter`` or a device copy; padding bytes are zeroed; the
trailer is the CRC-32C of everything before it. On a GPU the CRC is computed there
(``kernels/triton_crc.py``) and copied into the trailer as a tensor, so nothing waits for
the device; on the CPU it is ``checksum.checksum``.

Reading (``unpack``): the CRC of the body is computed on the device and compared with the
trailer, and the header is parsed on the host from one small copy that carries both CRCs
and the first ``HEAD`` bytes (one wait for the device per message). A damaged message is a
``CorruptMessageError``, as on the host. The parts are views of the message tensor. Inside
``deferred.deferred_checks()`` the comparison waits for the block's end, and a message
whose header is fixed by its tensor (``unpack_steady``) is opened without reading it.

A codec whose header is fixed by the tensor's shape and dtype (``steady``) writes the same
header bytes into every message: they are copied from a tensor kept on the device
(``_kept_bytes``), not staged in pinned host memory per message, so an encode queues no
host-to-device copy (and can be captured in a CUDA graph).
"""

from __future__ import annotations

import functools
import struct
from typing import Callable, NamedTuple

import numpy as np
import torch

from ..errors import CorruptMessageError, DeviceChecksumError, RefusedInputError
from ..kernels import triton_affine, triton_crc, triton_halves
from ..kernels.device import put
from ..payload import PartWriter, Payload
from . import deferred
from .checksum import checksum
from .format import DTYPE_CODES, FIXED, ITEMSIZE, TRAILER, layout, part_nbytes, payload_nbytes, plan, read_header

HEAD = 256  # bytes of a message copied to the host to read its header (more if it is longer)


def check(message: torch.Tensor, name: str = "message") -> torch.Tensor:
    """``message`` if it is a contiguous 1-d uint8 tensor, else a ``ValueError`` naming it."""
    if message.dtype != torch.uint8 or message.dim() != 1 or not message.is_contiguous():
        raise ValueError(f"{name} must be a contiguous 1-d uint8 tensor, got {message.dtype} "
                         f"{tuple(message.shape)}{'' if message.is_contiguous() else ' (not contiguous)'}")
    return message


def _sized(out: torch.Tensor, nbytes: int) -> torch.Tensor:
    """``out`` resized to ``nbytes`` within its storage, or a new tensor on its device when the
    storage is too small (a grown message is not copied: its old bytes are overwritten)."""
    check(out, "out")
    room = out.untyped_storage().nbytes() - out.storage_offset()
    if room >= nbytes and out._base is None:  # not a view: its storage holds nothing else
        return out.set_(out.untyped_storage(), out.storage_offset(), (nbytes,))
    return torch.empty(nbytes, dtype=torch.uint8, device=out.device)


def _host_bytes(data, device: torch.device) -> torch.Tensor:
    """A uint8 CPU tensor of ``data`` (bytes) to copy to ``device``: pinned where that is a
    GPU, so that the copy does not wait. The pinned tensor comes from torch's caching host
    allocator (``torch.empty(..., pin_memory=True)``) and is filled in place:
    ``Tensor.pin_memory()`` first asks the driver whether the source is pinned
    (``aten::is_pinned``), the largest single host operation of a small message's encode on
    a GPU (``gpu_bench``'s ``message_overhead``). The device, not
    ``torch.cuda.is_available()`` (itself a visible share of a small encode: ``gpu_bench``'s
    ``host_profile``), decides."""
    if device.type != "cuda":
        return torch.frombuffer(bytearray(data), dtype=torch.uint8)
    host = torch.empty(len(data), dtype=torch.uint8, pin_memory=True)
    host.numpy()[:] = np.frombuffer(data, dtype=np.uint8)
    return host


@functools.lru_cache(maxsize=256)
def _kept_bytes(data: bytes, device: str) -> torch.Tensor:
    """``data`` in a uint8 tensor kept on ``device``: a steady header, copied from there into
    every message (the cache holds the few headers a run's tensors have)."""
    return _host_bytes(data, torch.device(device)).to(device)


def _on_device(t: torch.Tensor) -> bool:
    """True where a message is checksummed by the device kernel: any tensor not on the CPU
    (the interpreter test of ``triton_crc`` sends CPU tensors this way too)."""
    return t.device.type != "cpu"


def _crc(body: torch.Tensor, trailer: torch.Tensor | None = None) -> torch.Tensor:
    """The CRC-32C of ``body`` as a one-element int32 tensor on its device, also written into
    ``trailer`` (4 bytes) when given: computed there by ``triton_crc`` on a GPU; on the host
    otherwise (a copy of the body), and on a GPU where Triton is missing. A device kernel
    that fails (a compiler or driver that refuses it) raises ``DeviceChecksumError``."""
    if _on_device(body) and triton_crc.AVAILABLE:
        return _on_the_device(lambda: triton_crc.crc32c_tensor(body, trailer=trailer), body.device)
    return _host_crc(memoryview(body.cpu().numpy()), body.device, trailer)


def _host_crc(data, device, trailer: torch.Tensor | None) -> torch.Tensor:
    """``checksum(data)`` (host bytes) as ``_crc`` returns it, on ``device``, into ``trailer``."""
    crc = put(torch.tensor([checksum(data)], dtype=torch.int64).to(torch.int32), device)
    if trailer is not None:
        trailer.copy_(crc.view(torch.uint8))
    return crc


def checks_on_device(message: torch.Tensor, out: torch.Tensor) -> bool:
    """Whether a message tensor decoded into ``out`` is checksummed by the device CRC as its
    values are copied out there (``copy_part``), at any size: the message is a device
    tensor, ``out`` on its device, and the device CRC runs (``unpack_steady``'s messages)."""
    return _on_device(message) and out.device == message.device and triton_crc.AVAILABLE


def _on_the_device(run, where: torch.device):
    """``run()``, a device CRC; its failure raised as ``DeviceChecksumError`` naming the
    device and the cause. A codec's refusal of its input (``RefusedInputError``) passes."""
    try:
        return run()
    except RefusedInputError:
        raise
    except Exception as exc:
        raise DeviceChecksumError(f"the device CRC-32C (Triton) failed on {where}: {type(exc).__name__}: "
                                  f"{str(exc)[:400]}") from exc


def _crc_copy(source: torch.Tensor, target: torch.Tensor, prefix: bytes,
              trailer: torch.Tensor | None = None) -> torch.Tensor:
    """``target.copy_(source)`` and the CRC-32C of ``prefix`` and the message's bytes among
    them (a message body whose first bytes ``prefix`` are on the host, then its part:
    uint8 both, or 16-bit floats cast from or to float32), written into ``trailer`` when
    given, as ``_crc`` computes it: on the device (``triton_crc.crc32c_copy``,
    ``triton_halves.crc32c_cast``) where Triton is, else on the host."""
    cast = source.dtype != target.dtype
    if triton_crc.AVAILABLE:
        return _on_the_device(lambda: (triton_halves.crc32c_cast if cast else triton_crc.crc32c_copy)(
            source, target, prefix, trailer), source.device)
    target.copy_(source)
    sent = (source if target.dtype == torch.float32 else target).reshape(-1).view(torch.uint8)
    return _host_crc(memoryview(bytes(prefix) + bytes(sent.cpu().numpy())), source.device, trailer)


def _write_parts(parts, offsets, message: torch.Tensor, written: int) -> None:
    """``parts`` (name, tensor or ``PartWriter``) written at ``offsets`` into the message, the
    alignment padding between them (from ``written`` on) zeroed."""
    for (_, t), off in zip(parts, offsets):
        if off > written:
            message[written:off].zero_()  # alignment padding
        nbytes = part_nbytes(t)
        written = off + nbytes
        if not nbytes:
            continue
        view = message[off:written].view(t.dtype)
        if isinstance(t, PartWriter):
            t.fill(view)
        else:  # a host part goes to a device message staged at once, with no wait for the device
            view.copy_(t.view(-1), non_blocking=t.device.type == "cpu")  # (torch waits after a blocking copy)


def pack(codec_id: int, digest: int, dtype: torch.dtype, shape: tuple[int, ...], payload: Payload,
         out: torch.Tensor, steady: bool = False) -> torch.Tensor:
    """``format.pack``'s bytes written into ``out`` (a uint8 tensor, resized within its storage
    or replaced by a new one on its device) and returned; ``steady``: the header is fixed by
    the tensor (``_kept_bytes``). A meta value kept on the device (``format.plan``'s
    ``device_meta``) is copied into its place in the header there."""
    device_meta: dict[str, int] = {}
    head, parts, offsets, total = plan(dtype, shape, payload, codec_id, digest, device_meta)
    message = _sized(out, total + TRAILER.size)
    on_host = not _on_device(message)
    written = offsets[0] if offsets else total  # the padding before the first part goes with the header
    before = bytes(head + bytes(written - len(head)))
    if steady and not on_host:
        message[:written].copy_(_kept_bytes(before, str(message.device)))
    else:
        message[:written].copy_(_host_bytes(before, message.device), non_blocking=not on_host)
    for name, at in device_meta.items():
        message[at:at + 4].copy_(payload.meta[name])
    _write_parts(parts, offsets, message, written)
    body = message[:total]
    if on_host:
        message[total:].copy_(torch.frombuffer(bytearray(TRAILER.pack(checksum(memoryview(body.numpy())))),
                                               dtype=torch.uint8))
    else:
        _crc(body, message[total:])
    return message


def meta_words(offsets: dict[str, int]) -> tuple[int, ...] | None:
    """The offsets of the float32 meta values a header keeps on the device (``format.plan``'s
    ``device_meta``: min-max quantization's lo and hi), where ``triton_affine.with_words`` can
    add them to a checksum made with zeros there in one launch, else None."""
    return tuple(sorted(offsets.values())) if 1 <= len(offsets) <= triton_affine.WITH_WORDS else None


def _head(message: torch.Tensor, end: int, extra: tuple[torch.Tensor, ...] = (), first: int = HEAD) -> tuple[bytes, bytes]:
    """(``extra``'s bytes, the first ``min(end, first)`` bytes of the message) in one copy to
    the host (one concatenation on the device)."""
    prefix = message[:min(end, first)]
    host = bytes(torch.cat([*extra, prefix]).cpu().numpy()) if _on_device(message) or extra else bytes(prefix.numpy())
    cut = sum(t.numel() for t in extra)
    return host[:cut], host[cut:]


def _header(message: torch.Tensor, end: int, head: bytes):
    """``format.read_header`` of the message from its first bytes ``head``; the whole header
    is copied when it is longer than those."""
    try:
        return read_header(head, len(head))
    except CorruptMessageError:
        if len(head) >= end:
            raise
        return read_header(bytes(message[:end].cpu().numpy()), end)


class Unverified(NamedTuple):
    """A message tensor opened with ``unpack(verify=False)`` (``Payload.unverified``) and its
    first bytes, copied to the host to read its header (or, from ``unpack_steady``, the
    bytes expected there: ``steady``); ``what`` names it in a deferred check's error;
    ``accepts``: for a steady header with meta kept on the device, the judge of its bytes
    (``head`` then holds zeros where the meta goes, and is not the checksum's prefix)."""
    message: torch.Tensor
    head: bytes
    what: str = "a message"
    steady: bool = False  # ``head`` is what the message should hold, not yet compared with it
    accepts: Callable[[bytes], bool] | None = None
    meta_words: tuple[int, ...] | None = None  # offsets of the meta kept on the device (``meta_words``)


def unpack(message: torch.Tensor, verify: bool = True, first: int = HEAD) -> tuple[dict, Payload]:
    """``format.unpack`` of a message tensor: the parts are views of it, on its device.

    ``verify=False``: the checksum is left to ``copy_part`` (``payload.unverified`` holds the
    message until then), as for a host message."""
    check(message)
    n = message.numel()
    if n < FIXED.size + TRAILER.size:
        raise CorruptMessageError(f"message of {n} bytes is shorter than the minimal frame")
    end = n - TRAILER.size
    if verify:
        crcs, head = _head(message, end, (_crc(message[:end]).view(torch.uint8), message[end:]), first)
        computed, stored = struct.unpack("<II", crcs)
        if computed != stored:
            raise CorruptMessageError(f"checksum mismatch in a message of {n} bytes")
    else:
        _, head = _head(message, end, first=first)
    codec_id, digest, dtype, shape, meta, parts, _, pos = _header(message, end, head)
    payload = Payload(meta=meta, unverified=None if verify else Unverified(message, head))
    for (name, part_dtype, numel), off in zip(parts, layout(parts, pos, end)):
        if name in payload.parts:
            raise CorruptMessageError(f"part {name!r} appears twice")
        payload.parts[name] = message[off:off + numel * ITEMSIZE[DTYPE_CODES[part_dtype]]].view(part_dtype)
    return {"codec_id": codec_id, "digest": digest, "dtype": dtype, "shape": shape}, payload


class Steady(NamedTuple):
    """The layout of a message whose header is fixed by its tensor (``steady_layout``)."""
    before: bytes  # the header and the padding before the first part (zeros where meta goes)
    parts: tuple[tuple[str, torch.dtype, int, int], ...]  # (name, dtype, numel, offset)
    total: int  # bytes before the trailer
    meta: tuple[tuple[str, int], ...] = ()  # (name, offset) of each float32 meta value kept on the device
    fixed: tuple[tuple[str, int], ...] = ()  # (name, value) of each meta value fixed by the codec


@functools.lru_cache(maxsize=256)
def steady_layout(codec_id: int, digest: int, dtype: torch.dtype, shape: tuple[int, ...],
                  parts: tuple[tuple[str, torch.dtype, int], ...], meta: tuple[tuple[str, int | None], ...] = ()
                  ) -> Steady:
    """The layout ``pack`` gives a message of ``parts`` (name, dtype, numel) and ``meta``
    (name, value): a value fixed by the codec, or None for a float32 kept on the device
    (none: a header fixed to the byte)."""
    skeleton = Payload(parts={name: PartWriter(part_dtype, numel, None) for name, part_dtype, numel in parts},
                       meta={name: torch.zeros(4, dtype=torch.uint8) if value is None else value
                             for name, value in meta})
    at: dict[str, int] = {}
    head, _, offsets, total = plan(dtype, shape, skeleton, codec_id, digest, at)
    first = offsets[0] if offsets else total
    return Steady(bytes(head) + bytes(first - len(head)),
                  tuple((name, d, numel, off) for (name, d, numel), off in zip(parts, offsets)), total,
                  tuple(at.items()), tuple((name, value) for name, value in meta if value is not None))


def unpack_steady(message: torch.Tensor, expected: Steady, what: str = "a message",
                  accepts_meta: Callable[[dict[str, float]], bool] | None = None) -> Payload:
    """A message tensor of the layout ``expected`` opened unverified without reading its
    header: the parts are views of it, and the expected header is the prefix its checksum is
    computed with (``read_part``), so a message with another header fails that check.
    ``CorruptMessageError`` now for a message of another length.

    A layout with meta kept on the device (``Steady.meta``): each such value is its 4 bytes
    in the message (a uint8 view, read by the codec's kernel on the device), and the header
    is judged at the block's end: equal to the expected bytes elsewhere, and its values (as
    float32) accepted by ``accepts_meta``. Meta fixed by the codec (``Steady.fixed``) is in
    the expected bytes, and in the payload as its value."""
    check(message)
    n = message.numel()
    if n != expected.total + TRAILER.size:
        raise CorruptMessageError(f"{what}: {n} bytes, where a message of this tensor has "
                                  f"{expected.total + TRAILER.size}")
    accepts = functools.partial(_judge, expected, accepts_meta or (lambda meta: True)) if expected.meta else None
    payload = Payload(unverified=Unverified(message, expected.before, what, steady=True, accepts=accepts,
                                            meta_words=meta_words(dict(expected.meta))))
    for name, part_dtype, numel, off in expected.parts:
        payload.parts[name] = message[off:off + numel * ITEMSIZE[DTYPE_CODES[part_dtype]]].view(part_dtype)
    payload.meta.update(expected.fixed)
    for name, off in expected.meta:
        payload.meta[name] = message[off:off + 4]
    return payload


def _judge(expected: Steady, accepts_meta, head: bytes) -> bool:
    """Whether a steady header with meta (``head``, the message's first bytes) is one its
    codec writes: the expected bytes outside the meta values, and values it accepts."""
    masked = bytearray(head)
    for _, off in expected.meta:
        masked[off:off + 4] = bytes(4)
    return (bytes(masked) == expected.before
            and accepts_meta({name: struct.unpack_from("<f", head, off)[0] for name, off in expected.meta}))


def _mismatch(computed: torch.Tensor, message: torch.Tensor) -> bool:
    """Whether the CRC ``computed`` (a one-element int32 tensor) differs from the message's
    trailer: both read in one copy to the host."""
    both = bytes(torch.cat([computed.view(torch.uint8), message[-TRAILER.size:]]).cpu().numpy())
    return both[:4] != both[4:]


def verify(message: torch.Tensor) -> None:
    """``CorruptMessageError`` unless a message tensor's checksum matches its trailer."""
    check(message)
    n = message.numel()
    if n < FIXED.size + TRAILER.size:
        raise CorruptMessageError(f"message of {n} bytes is shorter than the minimal frame")
    if _mismatch(_crc(message[:n - TRAILER.size]), message):
        raise CorruptMessageError(f"checksum mismatch in a message of {n} bytes")


def read_part(payload: Payload, name: str, read, spoil, checksums: bool = True, later: bool = False) -> None:
    """Part ``name`` of an unverified message tensor (``unpack(verify=False)``) read by
    ``read(part bytes, prefix)``, which writes the part's values where its caller wants them
    and returns the CRC-32C of the host bytes ``prefix`` and the part's bytes (a one-element
    tensor): in one pass where the part ends the message body and the bytes before it are
    among those read for the header, else after the message is verified. ``later``: ``read``
    also takes ``rest``, the bytes of the body after the part (``triton_crc.crc32c_copy``),
    whose own CRC is added here, so the part need not end the body. A mismatch calls
    ``spoil()`` (which overwrites what ``read`` wrote) and raises ``CorruptMessageError``;
    inside ``deferred_checks`` both happen at the block's end, and the part is read before
    its message is verified. ``checksums=False``: ``read`` returns no CRC, and the message is
    checksummed apart.

    A steady header with meta kept on the device (``Unverified.meta_words``) is the prefix
    with zeros there; the one pass's CRC gets the message's own bytes there added
    (``triton_affine.with_words``)."""
    message, head, what, steady, accepts, words = payload.unverified
    checks = deferred.active()
    part = payload.parts[name]
    end = message.numel() - TRAILER.size
    nbytes = part.numel() * part.element_size()
    offset = part.data_ptr() - message.data_ptr() if nbytes else end
    if not 0 <= offset <= offset + nbytes <= end:
        raise ValueError(f"part {name!r} ({nbytes} bytes at {offset}) is not within the message body of {end} bytes")
    source = message[offset:offset + nbytes]
    rest = end - offset - nbytes
    one_pass = (checksums and (later or not rest) and offset <= len(head)  # the prefix is known,
                and (accepts is None or words is not None))  # up to the meta kept on the device
    if one_pass:
        crc = read(source, head[:offset], rest) if later else read(source, head[:offset])
        if rest:
            crc = crc ^ triton_crc.raw_crc(message[offset + nbytes:end])
    else:
        crc = _crc(message[:end])
    if one_pass and accepts is not None:
        crc = triton_affine.with_words(crc, message, words)
    if checks is not None:  # compared at the block's end: the part is read now
        if not one_pass:
            read(source, b"")
        checks.add(crc, message[end:], spoil, what, *((message[:len(head)], accepts or head) if steady else ()))
        payload.unverified = None
        return
    bad = _mismatch(crc, message)
    if not one_pass and not bad:
        read(source, b"")
    payload.unverified = None
    if bad:
        spoil()
        raise CorruptMessageError(f"checksum mismatch in a message of {message.numel()} bytes")


def copy_part(payload: Payload, name: str, dst: torch.Tensor) -> None:
    """``wire.copy_part`` for a message tensor (``read_part``): ``dst``, on the message's
    device, gets part ``name``'s bytes (uint8), or, for a part of 16-bit floats, its values
    as float32; a damaged message leaves ``dst`` all 0xFF bytes (NaN as float32)."""
    message = payload.unverified.message
    part = payload.parts[name]
    nbytes = part.numel() * part.element_size()
    cast = part.dtype in triton_halves.HALVES and dst.dtype == torch.float32
    if dst.device != message.device or (dst.numel() != part.numel() if cast
                                        else dst.dtype != torch.uint8 or dst.numel() != nbytes):
        raise ValueError(f"part {name!r}: dst is not {nbytes} uint8 (or the part's values as float32) on "
                         f"{message.device}, got {dst.numel()} {dst.dtype} on {dst.device}")
    read_part(payload, name, lambda source, prefix: _crc_copy(source.view(part.dtype) if cast else source, dst, prefix),
              spoil=lambda: dst.view(torch.uint8).fill_(0xFF))


def measure(message: torch.Tensor, first: int = HEAD) -> tuple[int, int]:
    """``format.measure`` of a message tensor (its header copied to the host)."""
    check(message)
    n = message.numel()
    end = n - TRAILER.size
    if end < FIXED.size:
        raise CorruptMessageError(f"message of {n} bytes is shorter than the minimal frame")
    _, head = _head(message, end, first=first)
    _, _, _, _, _, parts, meta_bytes, _ = _header(message, end, head)
    payload = payload_nbytes(parts, meta_bytes)
    return payload, n - payload


def into(message, out: torch.Tensor) -> torch.Tensor:
    """A host message's bytes copied into ``out`` (sized as by ``pack``) on its device."""
    target = _sized(out, len(message))
    target.copy_(_host_bytes(message, target.device), non_blocking=target.device.type != "cpu")
    return target


def to_host(message: torch.Tensor) -> bytearray:
    """A message tensor's bytes as a host message (``bytearray``)."""
    return bytearray(check(message).cpu().numpy().tobytes())


def from_host(message, device) -> torch.Tensor:
    """A host message's bytes in a new uint8 tensor on ``device``."""
    return put(torch.from_numpy(np.frombuffer(bytes(message), dtype=np.uint8).copy()), device)
