"""Policies by name, and a parser for specs such as ``"entropy_bits(c=5, m=4)"``. A policy registers
itself where it is defined (``@register``); ``policies/__init__`` imports every module of the package."""

from __future__ import annotations

from .base import Policy
from ..spec_syntax import call_parts, check_keywords, parse

POLICIES: dict[str, type[Policy]] = {}  # filled by ``register`` as each policy's module is imported


def register(cls: type[Policy]) -> type[Policy]:
    """Class decorator: make ``cls`` available to ``make_policy`` under ``cls.name``."""
    name = getattr(cls, "name", None)
    if not (isinstance(name, str) and name.isidentifier()) or not (isinstance(cls, type) and issubclass(cls, Policy)):
        raise ValueError(f"policy {cls!r}: a registered policy is a Policy subclass with an identifier ``name``")
    POLICIES[name] = cls
    return cls


def make_policy(spec: str, seed: int = 0) -> Policy:
    """Build a policy from its spec with its own ``seed``; ``ValueError`` names what is wrong."""
    node = parse(spec, "policy")
    name, args, values = call_parts(node, spec, "policy", POLICIES)
    if args:
        raise ValueError(f"policy spec {spec!r}: arguments must be keywords")
    if "seed" in values:
        raise ValueError(f"policy spec {spec!r}: the seed comes from the run, not the spec")
    check_keywords(spec, "policy", name, POLICIES[name], values, skip=("seed",))
    try:
        return POLICIES[name](**values, seed=seed)
    except TypeError as exc:
        raise ValueError(f"policy spec {spec!r}: {exc}") from None
