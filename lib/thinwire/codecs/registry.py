"""Codecs by name, and a parser for codec specs such as ``"ef(topk(ratio=0.01))"``.

A spec is a Python-call expression over registered names with literal keyword
arguments; nested codecs are positional. ``Codec.spec()`` prints the canonical form. A codec
registers itself where it is defined (``@register``); ``codecs/__init__`` imports every
module of the package, so a new codec is a new file and nothing else.
"""

from __future__ import annotations

from .base import Codec
from ..spec_syntax import call_parts, check_keywords, parse

CODECS: dict[str, type[Codec]] = {}  # filled by ``register`` as each codec's module is imported


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
    check_keywords(spec, "codec", name, CODECS[name], values)
    return CODECS[name](*[_build(a, spec) for a in args], **values)
