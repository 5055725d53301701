"""Checksums of message tensors compared at the end of a block, so that a decode on a GPU
waits for nothing.

A message tensor is verified by comparing the CRC-32C its device computes with the
message's trailer (``tensor_message.read_part``); reading that comparison waits for the
device, once per message. Inside ``with deferred_checks():`` a decode registers the computed
CRC and the trailer instead (``DeferredChecks.add``), and the block's end compares all of
them after one copy to the host per device (``verify_all``). Until then the decoded values
are unverified; at the end, the destination of every message whose CRC differs is set to
all 0xFF bytes (NaN) and ``CorruptMessageError`` names it, so a damaged message never
decodes to a wrong tensor once the block is left. The messages must stay unchanged until
then.

A header fixed by the tensor's shape and dtype (fp32, fp16, bf16: ``Codec.steady_parts``) is
not read either: its expected bytes are the CRC's prefix (``tensor_message.unpack_steady``),
compared in the same copy; a header whose meta an encode wrote on the device (min-max
quantization's lo and hi) is judged there too. Encodes and decodes may leave checks of
their own: ``refuse_unless`` (a NaN or Inf an encode on the GPU did not read: the same
``ValueError`` as outside a block) and ``corrupt_unless`` (QSGD's norms finite and
non-negative, MQGrad's row ranges finite and ordered, top-k's indices within the tensor).
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Callable

import numpy as np
import torch

from ..errors import CorruptMessageError

_local = threading.local()


class DeferredChecks:
    """The checks registered in one ``deferred_checks`` block, each (the device tensors to
    read; the judge of their bytes, given as one ``bytes`` per tensor; what restores safety
    when it fails, or None; what failed, for the error; whether that is a refused tensor,
    a ``ValueError``, rather than a damaged message). The checks of one message share its
    ``spoil`` (the same function object), by which it is counted once."""

    def __init__(self):
        self.pending: list[tuple[list[torch.Tensor], Callable[[list[bytes]], bool], Callable[[], object] | None,
                                 str, bool]] = []

    def add(self, crc: torch.Tensor, trailer: torch.Tensor, spoil: Callable[[], object], what: str,
            head: torch.Tensor | None = None, expected: bytes | Callable[[bytes], bool] = b"") -> None:
        """Compare ``crc`` with ``trailer`` at the block's end, and the bytes ``head`` (a
        message's first bytes, on ``crc``'s device) with ``expected`` where given (or judge
        them by it, a function of the bytes); on a mismatch call ``spoil()``."""
        got = [crc.reshape(-1).view(torch.uint8), trailer] + ([head] if head is not None else [])
        judge_head = expected if callable(expected) else bytes(expected).__eq__
        self.pending.append((got, lambda read: read[0] == read[1] and (len(read) < 3 or judge_head(read[2])),
                             spoil, what, False))

    def refuse_unless(self, values: torch.Tensor, accepts: Callable[[bytes], bool], what: str) -> None:
        """At the block's end, ``ValueError`` (``what``) unless ``accepts`` the bytes of
        ``values`` (a tensor an encode made on the device and did not read: a range that
        must be finite)."""
        self.pending.append(([values.reshape(-1).view(torch.uint8)], lambda read: accepts(read[0]), None, what, True))

    def corrupt_unless(self, values: torch.Tensor, accepts: Callable[[bytes], bool], spoil: Callable[[], object],
                       what: str) -> None:
        """At the block's end, ``spoil()`` and count the message ``what`` as damaged unless
        ``accepts`` the bytes of ``values`` (what a decode found on the device and did not
        read: its bucket norms' least and greatest)."""
        self.pending.append(([values.reshape(-1).view(torch.uint8)], lambda read: accepts(read[0]), spoil, what, False))

    def verify_all(self, keep: bool = False) -> None:
        """Judge every registered check (one copy to the host per device) and forget them
        (``keep``: keep them, to judge again after a CUDA graph's next replay). A refused
        tensor is a ``ValueError``; otherwise ``CorruptMessageError`` names the messages
        that failed, after ``spoil``."""
        pending = self.pending
        if not keep:
            self.pending = []
        by_device: dict[torch.device, list] = {}
        for entry in pending:
            by_device.setdefault(entry[0][0].device, []).append(entry)
        failed: dict[int, str] = {}  # a message's checks share its spoil: it is named, and spoiled, once
        refused = []
        for entries in by_device.values():
            read, at = torch.cat([t for got, *_ in entries for t in got]).cpu().numpy().tobytes(), 0
            for got, judge, spoil, what, refusal in entries:
                pieces = []
                for t in got:
                    pieces.append(read[at:at + t.numel()])
                    at += t.numel()
                if judge(pieces):
                    continue
                if refusal:
                    refused.append(what)
                elif id(spoil) not in failed:
                    spoil()
                    failed[id(spoil)] = what
        if refused:
            raise ValueError("; ".join(refused) + (f" (and {len(failed)} damaged messages, their values set to NaN)"
                                                   if failed else ""))
        if failed:
            names = list(failed.values())
            shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
            checked = len({id(entry[2]) for entry in pending if not entry[4]})
            raise CorruptMessageError(f"{len(failed)} of {checked} messages decoded in a deferred_checks block "
                                      f"are damaged (checksum, header or values out of range): {shown}; their "
                                      "values are set to NaN")


def spoiled(out: torch.Tensor) -> torch.Tensor:
    """``out`` overwritten with NaN (0xFF bytes): the values of a damaged message."""
    return out.view(torch.uint8).fill_(0xFF)


@contextmanager
def judged_together(what: str):
    """A decode outside any ``deferred_checks`` block whose checks (its message's checksum,
    and what it leaves to ``corrupt_unless``) are read in one copy at this block's end: one
    wait for the device, where reading each as it is made waits once each. A failed check
    raises ``CorruptMessageError`` naming ``what``, with the values set to NaN."""
    checks = DeferredChecks()
    with deferred_checks(into=checks):
        yield
    try:
        checks.verify_all()
    except CorruptMessageError:
        raise CorruptMessageError(f"{what} is damaged (checksum, header or values out of range); its values are "
                                  "set to NaN") from None


def finite_float32(raw: bytes) -> bool:
    """Whether every float32 in ``raw`` (the bytes a check read) is finite: the judge of a
    range or norms an encode left on the device (``refuse_unless``)."""
    return bool(np.isfinite(np.frombuffer(raw, dtype=np.float32)).all())


class ReadTogether:
    """A decode's checks outside any block, left here by ``read_or_judge`` and read in one
    copy when the decode asks (``read``): one wait for the device, where reading each as it
    is made waits once each. The first that fails, in the order they were made, raises its
    own ``CorruptMessageError``."""

    def __init__(self):
        self._checks: list[tuple[torch.Tensor, Callable[[list[int]], str | None]]] = []

    def add(self, found: torch.Tensor, fault: Callable[[list[int]], str | None]) -> None:
        self._checks.append((found.reshape(-1), fault))

    def read(self) -> None:
        checks, self._checks = self._checks, []
        if not checks:
            return
        got, at = torch.cat([found for found, _ in checks]).tolist(), 0
        for found, fault in checks:
            wrong, at = fault(got[at:at + found.numel()]), at + found.numel()
            if wrong:
                raise CorruptMessageError(wrong)


def clamps(judge) -> bool:
    """Whether a decode given ``judge`` (``read_or_judge``'s) clamps its indices into the
    tensor meanwhile: a block's judge reads its checks after the indices are used, where a
    ``ReadTogether`` is read before they are."""
    return judge is not None and not isinstance(judge, ReadTogether)


def read_or_judge(found: torch.Tensor, fault: Callable[[list[int]], str | None], judge=None) -> None:
    """``fault`` of what a decode ``found`` on its device (int64 values; ``fault`` says what is
    wrong with them, or None): read now in one copy to the host (one wait on a GPU), and
    ``CorruptMessageError`` with what it says; or, with ``judge``, left to
    ``judge(found, accepts)`` (a block's ``corrupt_unless``, with the message's spoil), or to
    a ``ReadTogether``."""
    if isinstance(judge, ReadTogether):
        judge.add(found, fault)
        return
    if judge is not None:
        judge(found, lambda read: fault(np.frombuffer(read, np.int64).tolist()) is None)
        return
    wrong = fault(found.tolist())
    if wrong:
        raise CorruptMessageError(wrong)


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
            except (CorruptMessageError, ValueError):
                pass  # the block's own error is the one to see; the damaged values are NaN
        raise
    stack.remove(checks)
    if into is None:
        checks.verify_all()
