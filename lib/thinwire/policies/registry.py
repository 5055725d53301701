"""Policies by name, and a parser for specs such as ``"entropy_bits(c=5, m=4)"``."""

from __future__ import annotations

from .always import Always
from .base import Policy
from .core_explorer import CoreExplorer
from .entropy_bits import EntropyBits
from .event_trigger import EventTrigger
from .random_send import RandomSend
from .relative_change import RelativeChange
from .sarsa_bits import SarsaBits
from .schedule import RandomBits, ShuffledBits
from ..spec_syntax import call_parts, parse

POLICIES: dict[str, type[Policy]] = {cls.name: cls for cls in (Always, CoreExplorer, EntropyBits, EventTrigger, RandomBits, RandomSend,
                                                               RelativeChange, SarsaBits, ShuffledBits)}


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
    try:
        return POLICIES[name](**values, seed=seed)
    except TypeError as exc:
        raise ValueError(f"policy spec {spec!r}: {exc}") from None
