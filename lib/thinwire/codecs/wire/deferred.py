"""Checksums of message tensors compared at the end of a block, so that a decode on a GPU
waits for nothing.

A message tensor is verified by comparing the CRC-32C its device computes with the
message's trailer (``tensor_message.read_part``). Reading that comparison is a wait for
the device: once per message, the host idles while the device finishes everything queued
before it, and a step that decodes several messages (a DDP bucket's, one per rank) cannot
queue one decode behind another. Inside ``with deferred_checks():`` a decode that
verifies its message as it reads it registers the computed CRC and the trailer instead
(``DeferredChecks.add``), and the block's end compares all of them after one copy to the
host per device (``verify_all``).

Until the block ends, the values decoded inside it are unverified. At its end, the
destination of every message whose CRC differs is set to all 0xFF bytes (NaN as float32),
as a failed in-place check leaves it, and ``CorruptMessageError`` names each such message:
a damaged message still never decodes to a wrong tensor once the block is left. The
messages must stay unchanged until then (the trailer is read at the end).

Where a codec's header is fixed by the tensor's shape and dtype (fp32, fp16, bf16:
``Codec.steady_parts``), a decode in the block does not read the header either: the
bytes it expects are the CRC's prefix (``tensor_message.unpack_steady``) and are compared
with the message's own at the block's end, in the same copy, so a whole decode is the one
kernel that copies (or casts) the values out while it checksums them.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Callable

import torch

from ..errors import CorruptMessageError

_local = threading.local()


class DeferredChecks:
    """The checks registered in one ``deferred_checks`` block, each (the device bytes to read:
    the computed CRC, the trailer and, for a header not read, the message's first bytes;
    the header bytes expected, or none; what restores safety on a mismatch; what the
    message was)."""

    def __init__(self):
        self.pending: list[tuple[list[torch.Tensor], bytes, Callable[[], object], str]] = []

    def add(self, crc: torch.Tensor, trailer: torch.Tensor, spoil: Callable[[], object], what: str,
            head: torch.Tensor | None = None, expected: bytes = b"") -> None:
        """Compare ``crc`` with ``trailer`` at the block's end, and the bytes ``head`` (a
        message's first bytes, on ``crc``'s device) with ``expected`` where given; on a
        mismatch call ``spoil()``."""
        got = [crc.reshape(-1).view(torch.uint8), trailer] + ([head] if head is not None else [])
        self.pending.append((got, bytes(expected), spoil, what))

    def verify_all(self, keep: bool = False) -> None:
        """Compare every registered check (one copy to the host per device) and forget them
        (``keep``: keep them, to compare again after a CUDA graph's next replay);
        ``CorruptMessageError`` naming the messages that failed, after ``spoil``."""
        pending = self.pending
        if not keep:
            self.pending = []
        by_device: dict[torch.device, list] = {}
        for entry in pending:
            by_device.setdefault(entry[0][0].device, []).append(entry)
        failed = []
        for entries in by_device.values():
            read, at = torch.cat([t for got, *_ in entries for t in got]).cpu().numpy().tobytes(), 0
            for got, expected, spoil, what in entries:
                crc, trailer, head = read[at:at + 4], read[at + 4:at + 8], read[at + 8:at + 8 + len(expected)]
                at += 8 + len(expected)
                if crc != trailer or head != expected:
                    spoil()
                    failed.append(what)
        if failed:
            shown = ", ".join(failed[:5]) + (f" and {len(failed) - 5} more" if len(failed) > 5 else "")
            raise CorruptMessageError(f"{len(failed)} of {len(pending)} messages decoded in a deferred_checks block "
                                      f"are damaged (checksum or header mismatch): {shown}; their values are set "
                                      "to NaN")


def active() -> DeferredChecks | None:
    """The innermost ``deferred_checks`` block of this thread, or None."""
    stack = getattr(_local, "stack", None)
    return stack[-1] if stack else None


@contextmanager
def deferred_checks(into: DeferredChecks | None = None):
    """A block whose message tensors' checksums are compared at its end (module docstring).
    An exception raised inside the block still spoils the damaged messages' values, and
    propagates as it is.

    ``into``: the checks are collected there and left for its owner to compare: a CUDA
    graph captured in the block (where nothing may be read) rewrites, at each replay, the
    CRCs that ``into.verify_all(keep=True)`` then compares."""
    checks = into if into is not None else DeferredChecks()
    stack = _local.__dict__.setdefault("stack", [])
    stack.append(checks)
    try:
        yield checks
    except BaseException:
        stack.remove(checks)
        if into is None:
            try:
                checks.verify_all()
            except CorruptMessageError:
                pass  # the block's own error is the one to see; the damaged values are NaN
        raise
    stack.remove(checks)
    if into is None:
        checks.verify_all()
