"""Algorithms by name: ``RunConfig(algorithm=name)``. An algorithm registers itself where it
is defined (``@register_algorithm("name")``); ``algorithms/__init__`` imports every module of
the package, so a new algorithm is a new module and nothing else."""

from __future__ import annotations

from .section import Section

ALGORITHMS: dict[str, type] = {}  # filled as each algorithm's module is imported


def register_algorithm(name: str, cls: type | None = None):
    """Make ``cls`` runnable as ``RunConfig(algorithm=name)``; without ``cls``, a class
    decorator that does. It needs ``Section`` (a frozen dataclass of its parameters, subclass
    of ``Section``), ``from_config(model, transport, config, steps_per_epoch)`` and the
    contract's members."""
    if cls is None:
        return lambda decorated: register_algorithm(name, decorated)
    if not (isinstance(getattr(cls, "Section", None), type) and issubclass(cls.Section, Section)):
        raise ValueError(f"algorithm {name!r}: {cls.__name__}.Section must be a subclass of Section")
    if not callable(getattr(cls, "from_config", None)):
        raise ValueError(f"algorithm {name!r}: {cls.__name__} needs a from_config classmethod")
    ALGORITHMS[name] = cls
    return cls
