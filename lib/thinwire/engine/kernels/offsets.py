"""Offset-value index coding (Aji & Heafield 2017, Sec. 5.1): sorted indices sent as the
gaps between them, in a variable number of bytes.

Gap i is ``index[i] - index[i-1]`` (with ``index[-1] = -1``, so every gap is >= 1).
Every gap takes one ``width``-bit word (8 or 16 bits); a gap that does not fit below
the word's largest value writes that value as an escape and goes, whole, into a second
part of int32 words. At 99% dropping the mean gap is 100 and about 8% of gaps escape:
1.3 bytes per index instead of 4. The encoder picks the width that gives fewer bytes
(16 bits at very sparse rates) and says which in the message meta. One
compiled loop each way (``gaps.py``).
"""

from __future__ import annotations

import functools

import numpy as np
import torch

from ..errors import CorruptMessageError
from ..wire import deferred
from . import device, gaps

WIDTHS = {8: np.uint8, 16: np.uint16}
WIRE = {8: np.uint8, 16: np.int16}  # 16-bit words travel as int16 bit patterns
WIRE_TORCH = {8: torch.uint8, 16: torch.int16}


def encode_offsets(index: torch.Tensor, longs: tuple[int, int] | None = None,
                   gap: torch.Tensor | None = None) -> tuple[int, torch.Tensor, torch.Tensor]:
    """Strictly increasing non-negative indices -> (width, words, escaped gaps as int32), on
    the indices' device (torch operations there, ``device.py``). ``longs``: the
    gaps of at least 255 and of at least 65,535 (``long_gaps``' two counts), where the
    caller has read them to the host already, so that the device path need not wait;
    ``gap``: the indices' ``index_gaps``, where the caller has them on the device already."""
    if device.on_device(index):
        return _encode_on_device(index, longs, gap)
    idx = index.numpy().astype(np.int64, copy=False)
    long8, long16 = gaps.long_gaps(idx, 0xFF, 0xFFFF)
    width = 8 if idx.size + 4 * long8 <= 2 * idx.size + 4 * long16 else 16
    words = np.empty(idx.size, WIDTHS[width])
    long = long8 if width == 8 else long16
    escaped = np.empty(long + 1, np.int32)  # room for split_gaps' one more
    gaps.split_gaps(idx, (1 << width) - 1, words, escaped)
    return width, torch.from_numpy(words.view(WIRE[width])), torch.from_numpy(escaped[:long])


def decode_offsets(width: int, words: torch.Tensor, escaped: torch.Tensor, count: int, numel: int,
                   judge=None) -> torch.Tensor:
    """Inverse of ``encode_offsets``: ``count`` strictly increasing int64 indices below
    ``numel``, or ``CorruptMessageError``; on the words' device (torch operations there,
    ``device.py``). ``judge(found, accepts)``: on a device, the checks are not read
    but left to the caller's judge (``wire.deferred_checks``' ``corrupt_unless``: ``accepts``
    the bytes of ``found``), and the indices are clamped into [0, numel) meanwhile."""
    if width not in WIDTHS or words.numel() != count or words.dtype != WIRE_TORCH[width]:
        raise CorruptMessageError(f"offsets: width {width!r} with {words.numel()} {words.dtype} words "
                                  f"for {count} indices")
    if device.on_device(words):
        index, found = _decode_on_device(width, words, escaped, count)
        if found is None:
            return index
        longs = escaped.numel()
        deferred.read_or_judge(found, lambda got: _fault(got, longs, numel), judge)
        return index.clamp_(0, max(numel - 1, 0)) if deferred.clamps(judge) else index
    index = np.empty(count, np.int64)
    fault = gaps.join_gaps(words.numpy().view(WIDTHS[width]), (1 << width) - 1, escaped.numpy(), index)
    if fault == 1:
        escapes = int(np.count_nonzero(words.numpy().view(WIDTHS[width]) == (1 << width) - 1))
        raise CorruptMessageError(f"offsets: {escapes} escapes but {escaped.numel()} long gaps")
    if fault == 2:
        raise CorruptMessageError("offsets: a gap below 1 (indices must increase)")
    if count and int(index[-1]) >= numel:
        raise CorruptMessageError(f"offsets: index {int(index[-1])} out of range for {numel} values")
    return torch.from_numpy(index)


def index_gaps(index: torch.Tensor) -> torch.Tensor:
    """The indices' gaps (int64, the first from -1), on their device: two launches writing
    the gaps, where ``torch.diff`` with a prepended -1 first copies the indices behind it."""
    index = index.to(torch.int64)
    gap = torch.empty_like(index)
    if index.numel():
        torch.add(index[:1], 1, out=gap[:1])
        torch.sub(index[1:], index[:-1], out=gap[1:])
    return gap


@functools.lru_cache(maxsize=8)
def _limits(where: str) -> torch.Tensor:
    return torch.tensor([[0xFF, 0xFFFF]], dtype=torch.int64, device=where)


def long_gaps(gap: torch.Tensor) -> torch.Tensor:
    """The gaps (``index_gaps``) of at least 255 and of at least 65,535, counted on their device
    (int64 [2], two launches), for a caller to read with its own values (``encode_offsets``'
    ``longs``)."""
    return (gap.unsqueeze(1) >= _limits(str(gap.device))).sum(0)


def _encode_on_device(index: torch.Tensor, longs: tuple[int, int] | None,
                      gap: torch.Tensor | None) -> tuple[int, torch.Tensor, torch.Tensor]:
    """``split_gaps`` in torch operations: the same width choice, words and escaped gaps."""
    gap = index_gaps(index) if gap is None else gap
    long8, long16 = longs if longs is not None else long_gaps(gap).tolist()  # one wait on a GPU
    width = 8 if gap.numel() + 4 * long8 <= 2 * gap.numel() + 4 * long16 else 16
    escape = (1 << width) - 1
    long = gap >= escape
    words = torch.where(long, escape, gap)
    words = words.to(torch.uint8) if width == 8 else (words - ((words >> 15) << 16)).to(torch.int16)  # int16 bits
    escaped = torch.nonzero_static(long, size=long8 if width == 8 else long16).reshape(-1)  # its size is known
    return width, words, gap[escaped].to(torch.int32)


def _decode_on_device(width: int, words: torch.Tensor, escaped: torch.Tensor,
                      count: int) -> tuple[torch.Tensor, torch.Tensor | None]:
    """``join_gaps`` in torch operations: each escape replaced by its long gap, in order, and
    the gaps summed from -1, with what the host loop checks, not read: (indices, int64
    [escapes, whether a gap is below 1, the last index]), or None for no indices."""
    escape = (1 << width) - 1
    gap = words.to(torch.int64) & escape  # a 16-bit word's int16 bit pattern read unsigned
    if not count:
        if escaped.numel():
            raise CorruptMessageError(f"offsets: 0 escapes but {escaped.numel()} long gaps")
        return gap, None
    long = gap == escape
    if escaped.numel():  # the escapes take the long gaps in order; a count that differs is refused
        # (fewer escapes: the positions left over are 0's, written over, and the message refused)
        at = torch.nonzero_static(long, size=escaped.numel(), fill_value=0).reshape(-1)
        gap[at] = escaped.to(device=gap.device, dtype=torch.int64)
    index = torch.cumsum(gap, 0) - 1
    return index, torch.stack([long.sum(), (gap < 1).any().to(torch.int64), index[-1]])


def _fault(found: list[int], longs: int, numel: int) -> str | None:
    """What the host loop would say of a device decode's ``found`` ([escapes, a gap below 1,
    the last index]) with ``longs`` long gaps, or None."""
    escapes, below, last = found
    if escapes != longs:
        return f"offsets: {escapes} escapes but {longs} long gaps"
    if below:
        return "offsets: a gap below 1 (indices must increase)"
    if last >= numel:
        return f"offsets: index {last} out of range for {numel} values"
    return None
