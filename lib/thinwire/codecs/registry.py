"""Codecs by name, and a parser for codec specs such as ``"ef(topk(ratio=0.01))"``.

A spec is a Python-call expression over registered names with literal keyword
arguments; nested codecs are positional. ``Codec.spec()`` prints the canonical form.
"""

from __future__ import annotations

from .quantize.binquant import BinQuantize
from .quantize.column_minmax import ColumnQuantize
from .quantize.qsgd import QSGD
from .base import Codec
from .compose.chain import Chain
from .compose.error_feedback import ErrorFeedback
from .compose.sized import Sized
from .sparsify.graddrop import GradDrop
from .dense.bf16 import BFloat16
from .dense.fp16 import Float16
from .dense.fp32 import Float32
from .quantize.minmax import Quantize
from .sparsify.key_cache import KeyCache
from .sparsify.topk import TopK
from ..spec_syntax import call_parts, parse

CODECS: dict[str, type[Codec]] = {
    cls.name: cls for cls in (Float32, Float16, BFloat16, TopK, Quantize, ErrorFeedback, Chain, GradDrop,
                              BinQuantize, QSGD, KeyCache, Sized, ColumnQuantize)
}


def register(cls: type[Codec]) -> type[Codec]:
    """Class decorator: make ``cls`` available to ``make_codec`` under ``cls.name``. Its
    ``codec_id`` (1..255, the wire header's codec byte) must be its own."""
    taken = {c.codec_id: c.name for c in CODECS.values() if c.name != cls.name}
    codec_id = getattr(cls, "codec_id", None)
    if not isinstance(codec_id, int) or not 1 <= codec_id <= 255 or codec_id in taken:
        raise ValueError(f"codec {cls.name!r}: codec_id={codec_id!r} is not allowed: it must be an int in "
                         f"1..255 not already taken (taken: {sorted(taken)})")
    CODECS[cls.name] = cls
    return cls


def make_codec(spec: str | Codec) -> Codec:
    """Build a codec from its spec; ``ValueError`` names what is wrong."""
    if isinstance(spec, Codec):
        return spec
    return _build(parse(spec, "codec"), spec)


def _build(node, spec: str) -> Codec:
    name, args, values = call_parts(node, spec, "codec", CODECS)
    return CODECS[name](*[_build(a, spec) for a in args], **values)
