"""Specs parsed once: a codec's or a policy's spec text becomes a ``Spec`` (its canonical
text, the registered names it uses, a digest), cached by the text it was given, so a config
and each of its ``.replace()`` copies parse a spec once per process, and the results key
reads the codecs a spec names from its ``Spec``, not from the text again. A codec tried
under a policy's decision (once per pair), so a config names what is wrong before any data
loads. Above the codecs and the policies it builds; the plain checks every layer uses stay
in ``validation``. A config keeps the canonical text (its dict form and key stay text)."""

from __future__ import annotations

import ast
import contextlib
import contextvars
import functools
import hashlib
from dataclasses import dataclass

import torch

from .codecs import CODECS, CodecState, make_codec
from .policies import POLICIES, make_policy


@dataclass(frozen=True)
class Spec:
    """A parsed spec: ``kind`` ("codec" or "policy"), its canonical ``text``
    (``Codec.spec()``, ``Policy.spec()``) and the registered ``names`` it uses, sorted."""

    kind: str
    text: str
    names: tuple[str, ...]

    @property
    def digest(self) -> str:
        """16 hex digits of the canonical text's SHA-256 (equal specs, equal digests)."""
        return hashlib.sha256(f"{self.kind}:{self.text}".encode()).hexdigest()[:16]

    def __str__(self) -> str:
        return self.text


def _named(text: str, registry: dict) -> tuple[str, ...]:
    return tuple(sorted({n.id for n in ast.walk(ast.parse(text, mode="eval")) if isinstance(n, ast.Name)
                         and n.id in registry}))


_PARSED: dict[tuple, Spec] = {}  # (kind, text given, the registry's classes) -> Spec; canonical texts too


def _parsed(kind: str, text: str, registered: tuple) -> Spec:
    """``registered`` (the registry's classes) is part of the key: a name registered again
    with another class is parsed again. The canonical text is entered as well, so a
    config's copies, which hold it, find it."""
    spec = _PARSED.get((kind, text, registered))
    if spec is None:
        registry, build = (CODECS, make_codec) if kind == "codec" else (POLICIES, make_policy)
        canonical = build(text).spec()
        spec = Spec(kind, canonical, _named(canonical, registry))
        _PARSED[(kind, text, registered)] = _PARSED[(kind, canonical, registered)] = spec
    return spec


def parse_codec(value) -> Spec:
    """The ``Spec`` of a codec spec (text, or a built ``Codec``); ``ValueError`` or ``TypeError`` as ``make_codec``."""
    if not isinstance(value, str):
        value = make_codec(value).spec()  # a Codec, or what make_codec refuses
    return _parsed("codec", value, tuple(CODECS.values()))


def parse_policy(value) -> Spec:
    """The ``Spec`` of a policy spec; ``ValueError`` or ``TypeError`` as ``make_policy``."""
    if not isinstance(value, str):
        make_policy(value)  # refuses it, naming what is wrong
    return _parsed("policy", value, tuple(POLICIES.values()))


def codec_spec(name: str, value) -> str:
    """The canonical form of a codec spec (``Codec.spec()``), or ``ValueError`` naming ``name``."""
    try:
        return parse_codec(value).text
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{name}={value!r} is not allowed: {exc}") from None


def policy_spec(name: str, value) -> str:
    """The canonical form of a policy spec, or ``ValueError`` naming ``name``."""
    try:
        return parse_policy(value).text
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{name}={value!r} is not allowed: {exc}") from None


def codec_under_policy(codec_name: str, codec: str, policy_name: str | None = None, policy: str | None = None) -> None:
    """Encode one small tensor with ``codec`` under ``policy``'s decision (none when the
    algorithm has no policy for it), so that a pair that cannot work together (a codec
    that needs a per-message decision without a policy, a policy's bit width for a codec
    that takes none) fails here, naming both parameters, not after the data has loaded.
    A pair that worked is not tried again in this process; inside ``pairs_tried_later()``
    none is tried."""
    if not pairs_tried_now():
        return
    try:
        if isinstance(codec, str) and (policy is None or isinstance(policy, str)):
            _probe(codec, policy, tuple(CODECS.values()), tuple(POLICIES.values()))
        else:  # a built codec (the DDP hook's): tried each time
            _probe.__wrapped__(codec, policy, (), ())
    except (ValueError, TypeError) as exc:
        pair = f"{codec_name}={codec!r}" + (f" with {policy_name}={policy!r}" if policy_name else " (no policy)")
        raise ValueError(f"{pair} is not allowed: {exc}") from None


_PAIRS_LATER = contextvars.ContextVar("pairs_tried_later", default=False)


@contextlib.contextmanager
def pairs_tried_later():
    """Checks every field of the configs made inside it but leaves ``codec_under_policy``'s
    encode for later: a paper's recipes are made when ``thinwire.papers`` is imported, and
    their pairs are tried when a run's config is made from them (``Recipe.apply``), so an
    import compiles no kernel for codecs its process never runs."""
    token = _PAIRS_LATER.set(True)
    try:
        yield
    finally:
        _PAIRS_LATER.reset(token)


def pairs_tried_now() -> bool:
    """False inside ``pairs_tried_later()``: for a section that tries its pairs itself."""
    return not _PAIRS_LATER.get()


@functools.lru_cache(maxsize=4096)
def _probe(codec, policy: str | None, codecs: tuple, policies: tuple) -> None:
    """``codecs`` and ``policies`` (the registries' classes) key the pairs that worked."""
    x = torch.linspace(-1.0, 1.0, 1024) * torch.linspace(0.5, 1.5, 1024).flip(0)
    decision = make_policy(policy).decide(0, "probe", x) if policy is not None else None
    if decision is None:
        make_codec(codec).encode(x, CodecState(0), "probe")
    elif decision.send:
        make_codec(codec).encode(x, CodecState(0), "probe", decision)
