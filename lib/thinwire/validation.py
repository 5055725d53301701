"""Checks that raise ``ValueError`` naming the parameter, the bad value and what is allowed.

Used by every config section, before any data is read or any model is built.
"""

from __future__ import annotations


def check(name: str, value, ok: bool, allowed: str) -> None:
    if not ok:
        raise ValueError(f"{name}={value!r} is not allowed: {name} must be {allowed}")


def int_in(name: str, value, lo: int, hi: int | None = None) -> None:
    ok = isinstance(value, int) and not isinstance(value, bool) and value >= lo and (hi is None or value <= hi)
    check(name, value, ok, f"an int in [{lo}, inf)" if hi is None else f"an int in [{lo}, {hi}]")


def float_in(name: str, value, lo: float, hi: float, lo_open: bool = False) -> None:
    ok = (isinstance(value, (int, float)) and not isinstance(value, bool)
          and (value > lo if lo_open else value >= lo) and value <= hi)
    check(name, value, ok, f"a number in {'(' if lo_open else '['}{lo}, {hi}]")


def one_of(name: str, value, options) -> None:
    check(name, value, isinstance(value, str) and value in options, f"one of {sorted(options)}")


def boolean(name: str, value) -> None:
    check(name, value, isinstance(value, bool), "True or False")


def codec_spec(name: str, value) -> str:
    """The canonical form of a codec spec (``Codec.spec()``), or ``ValueError`` naming ``name``."""
    from .codecs import make_codec
    try:
        return make_codec(value).spec()
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{name}={value!r} is not allowed: {exc}") from None


def policy_spec(name: str, value) -> str:
    """The canonical form of a policy spec, or ``ValueError`` naming ``name``."""
    from .policies import make_policy
    try:
        return make_policy(value).spec()
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{name}={value!r} is not allowed: {exc}") from None


def codec_under_policy(codec_name: str, codec: str, policy_name: str | None = None, policy: str | None = None) -> None:
    """Encode one small tensor with ``codec`` under ``policy``'s decision (none when the
    algorithm has no policy for it), so that a pair that cannot work together (a codec
    that needs a per-message decision without a policy, a policy's bit width for a codec
    that takes none) fails here, naming both parameters, not after the data has loaded."""
    import torch
    from .codecs import CodecState, make_codec
    from .policies import make_policy
    x = torch.linspace(-1.0, 1.0, 1024) * torch.linspace(0.5, 1.5, 1024).flip(0)
    try:
        decision = make_policy(policy).decide(0, "probe", x) if policy is not None else None
        if decision is None:
            make_codec(codec).encode(x, CodecState(0), "probe")
        elif decision.send:
            make_codec(codec).encode(x, CodecState(0), "probe", decision)
    except (ValueError, TypeError) as exc:
        pair = f"{codec_name}={codec!r}" + (f" with {policy_name}={policy!r}" if policy_name else " (no policy)")
        raise ValueError(f"{pair} is not allowed: {exc}") from None


def normalize_numbers(section) -> None:
    """In a frozen dataclass, turn an int given for a ``float`` field into that float
    (``lr=1`` and ``lr=1.0`` are one config and hash alike). Bools are left alone: the
    field's own check rejects them."""
    import dataclasses
    for f in dataclasses.fields(section):
        value = getattr(section, f.name)
        if f.type in ("float", float) and isinstance(value, int) and not isinstance(value, bool):
            object.__setattr__(section, f.name, float(value))
