"""bfloat16 transmission: half the bytes of float32, float32's exponent range.

The 16-bit baseline beside fp16 (``torch.distributed``'s ``bf16_compress_hook``): each
value is rounded to bfloat16 (8 bits of mantissa, round to nearest even), so nothing
overflows that float32 can hold, at about 3 significant digits.
"""

from __future__ import annotations

import torch

from .fp16 import Float16
from ..registry import register


@register
class BFloat16(Float16):
    """Send every value as bfloat16. NaN and Inf pass through."""

    name = "bf16"
    codec_id = 14
    dtype = torch.bfloat16
