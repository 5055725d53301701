"""The bit widths the property tests sweep.

Each width is its own compiled kernel (``bitpack.width_table``), so a sweep of all sixteen
compiles sixteen of each kernel it touches. ``make test`` takes a sample that covers each
kernel's cases: one bit, widths inside a byte that straddle byte edges (3, 7), the bytes
themselves (8), the first two-byte width (9), an odd two-byte width (13) and the widest (16).
The other nine widths are marked ``long``: ``make test-long`` (CI, after ``make test``) runs
them, so every width is still checked on every change.
"""

import pytest

EVERYDAY = (1, 3, 7, 8, 9, 13, 16)


def every_width():
    """pytest parameters for bits 1-16: the everyday sample, and the rest marked long."""
    return [b if b in EVERYDAY else pytest.param(b, marks=pytest.mark.long) for b in range(1, 17)]
