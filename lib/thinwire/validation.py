"""Checks that raise ``ValueError`` naming the parameter, the bad value and what is allowed.

Used by every config section, before any data is read or any model is built.
"""

from __future__ import annotations

import difflib


def check(name: str, value, ok: bool, allowed: str, owner: str | None = None) -> None:
    """``ValueError`` unless ``ok``; ``owner`` (a codec's name) heads the message."""
    if not ok:
        raise ValueError(f"{owner + ': ' if owner else ''}{name}={value!r} is not allowed: {name} must be {allowed}")


def is_number(value) -> bool:
    """An int or float, not a bool (True would silently mean 1)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


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


def normalize_numbers(section) -> None:
    """In a frozen dataclass, turn an int given for a ``float`` field into that float
    (``lr=1`` and ``lr=1.0`` are one config and hash alike). Bools are left alone: the
    field's own check rejects them."""
    import dataclasses
    for f in dataclasses.fields(section):
        value = getattr(section, f.name)
        if f.type in ("float", float) and isinstance(value, int) and not isinstance(value, bool):
            object.__setattr__(section, f.name, float(value))


def did_you_mean(words, choices) -> str:
    """`` (did you mean 'steps'?)`` for the unknown ``words`` that resemble a choice, else ""."""
    close = {w: difflib.get_close_matches(w, list(choices), n=2, cutoff=0.6) for w in words}
    hints = [f"{w!r}: {' or '.join(repr(c) for c in near)}" for w, near in close.items() if near]
    if not hints:
        return ""
    if len(close) == 1:
        return f" (did you mean {' or '.join(repr(c) for c in next(iter(close.values())))}?)"
    return f" (did you mean {'; '.join(hints)}?)"
