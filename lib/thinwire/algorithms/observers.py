"""Observers: measurements a paper's figures need from inside an algorithm's round, kept
out of the algorithm.

An algorithm that offers the hook (``WeightAveraging``: ``observe=...`` in its section)
calls its observer at fixed points of a step, inside ``Round.untimed()`` (charged to no
side, no codec time), and merges what ``collect`` returns into the step's ``extra``. An
observer reads; it never changes what is sent, the models, or any generator the run
draws from. Oland & Raj's probes (``papers/oland_raj/probes.py``) are one.

An observer is named by a spec in the codecs' syntax (``oland_raj_probes(entropy_grid=True)``)
and registered with ``register_observer``; a paper's package registers its own when it is
imported, and ``launch`` passes that module to its ranks (``plugins.registering_modules``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..spec_syntax import dataclass_build, dataclass_text


@dataclass
class Observer:
    name: ClassVar[str] = ""

    def exchange(self, algorithm, x, y) -> None:
        """Before an exchange: ``x``, ``y`` the local workers' last batches."""

    def before_push(self, algorithm, worker: int, key: str, tensor, decision, state) -> None:
        """Before worker ``worker`` encodes ``tensor`` under ``decision``; ``state``: its codec
        state, which must be left as it is."""

    def collect(self) -> dict:
        """What this step measured (numbers by name), then forget it."""
        return {}

    def spec(self) -> str:
        return dataclass_text(self.name, self)


OBSERVERS: dict[str, type[Observer]] = {}


def register_observer(cls: type[Observer]) -> type[Observer]:
    """Class decorator: make ``cls`` known to ``make_observer`` under ``cls.name``."""
    if not (isinstance(cls, type) and issubclass(cls, Observer) and str(cls.name).isidentifier()):
        raise ValueError(f"register_observer({cls!r}) is not allowed: it takes an Observer subclass with a name")
    OBSERVERS[cls.name] = cls
    return cls


def make_observer(spec: str) -> Observer | None:
    """The observer of ``spec`` ("" for none); ``ValueError`` names what is wrong."""
    if spec == "":
        return None
    return dataclass_build(spec, "observer", OBSERVERS, "observe")


def check_observer(spec) -> str:
    """The canonical text of an observer spec ("" for none)."""
    if not isinstance(spec, str):
        raise ValueError(f"observe={spec!r} is not allowed: observe must be an observer spec or ''")
    observer = make_observer(spec)
    return "" if observer is None else observer.spec()
