"""Specs in their canonical text: a codec's or a policy's spec parsed, built and printed
back (``Codec.spec()``), and a codec tried under a policy's decision, so a config names
what is wrong before any data loads. Above the codecs and the policies it builds; the
plain checks every layer uses stay in ``validation``."""

from __future__ import annotations

import torch

from .codecs import CodecState, make_codec
from .policies import make_policy


def codec_spec(name: str, value) -> str:
    """The canonical form of a codec spec (``Codec.spec()``), or ``ValueError`` naming ``name``."""
    try:
        return make_codec(value).spec()
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{name}={value!r} is not allowed: {exc}") from None


def policy_spec(name: str, value) -> str:
    """The canonical form of a policy spec, or ``ValueError`` naming ``name``."""
    try:
        return make_policy(value).spec()
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{name}={value!r} is not allowed: {exc}") from None


def codec_under_policy(codec_name: str, codec: str, policy_name: str | None = None, policy: str | None = None) -> None:
    """Encode one small tensor with ``codec`` under ``policy``'s decision (none when the
    algorithm has no policy for it), so that a pair that cannot work together (a codec
    that needs a per-message decision without a policy, a policy's bit width for a codec
    that takes none) fails here, naming both parameters, not after the data has loaded."""
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
