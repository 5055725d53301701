"""The bit widths the everyday tests use.

Each width is its own compiled kernel (``bitpack.width_table``): from an empty kernel cache,
one width of one table (pack, unpack, the fused quantizers) costs about 4 s of compiling
here, 302 of the unit set's 392 s of compiling when its tests used 61 table widths. So
``make test``'s tests take their widths from one sample that covers each kernel's cases:
one bit, two and four (whole codes in a byte, and the widths the papers use most), three
(codes straddling byte edges), the byte itself (8), the first two-byte width (9), a two-byte
width with a 4-bit high part (12) and the widest (16). ``every_width()`` marks the other
eight ``long``: ``make test-long`` (CI, after ``make test``) runs them, so every width is
still checked on every change.
"""

import pytest

EVERYDAY = (1, 2, 3, 4, 8, 9, 12, 16)


def every_width():
    """pytest parameters for bits 1-16: the everyday sample, and the rest marked long."""
    return [b if b in EVERYDAY else pytest.param(b, marks=pytest.mark.long) for b in range(1, 17)]
