"""Offset-value index coding (Aji & Heafield 2017, Sec. 5.1): sorted indices sent as the
gaps between them, in a variable number of bytes.

Gap i is ``index[i] - index[i-1]`` (with ``index[-1] = -1``, so every gap is >= 1).
Every gap takes one ``width``-bit word (8 or 16 bits); a gap that does not fit below
the word's largest value writes that value as an escape and goes, whole, into a second
part of int32 words. At 99% dropping the mean gap is 100 and about 8% of gaps escape:
1.3 bytes per index instead of 4. The encoder picks the width that gives fewer bytes
(16 bits at very sparse rates) and says which in the message meta. One
compiled loop each way (``kernels/gaps.py``).
"""

from __future__ import annotations

import numpy as np
import torch

from ..errors import CorruptMessageError
from ..kernels import gaps

WIDTHS = {8: np.uint8, 16: np.uint16}
WIRE = {8: np.uint8, 16: np.int16}  # 16-bit words travel as int16 bit patterns


def encode_offsets(index: torch.Tensor) -> tuple[int, torch.Tensor, torch.Tensor]:
    """Strictly increasing non-negative indices -> (width, words, escaped gaps as int32)."""
    idx = index.numpy().astype(np.int64, copy=False)
    long8, long16 = gaps.long_gaps(idx, 0xFF, 0xFFFF)
    width = 8 if idx.size + 4 * long8 <= 2 * idx.size + 4 * long16 else 16
    words = np.empty(idx.size, WIDTHS[width])
    escaped = np.empty(long8 if width == 8 else long16, np.int32)
    gaps.split_gaps(idx, (1 << width) - 1, words, escaped)
    return width, torch.from_numpy(words.view(WIRE[width])), torch.from_numpy(escaped)


def decode_offsets(width: int, words: torch.Tensor, escaped: torch.Tensor, count: int, numel: int) -> torch.Tensor:
    """Inverse of ``encode_offsets``: ``count`` strictly increasing int64 indices below
    ``numel``, or ``CorruptMessageError``."""
    if width not in WIDTHS or words.numel() != count or words.numpy().dtype != WIRE[width]:
        raise CorruptMessageError(f"offsets: width {width!r} with {words.numel()} {words.dtype} words "
                                  f"for {count} indices")
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
