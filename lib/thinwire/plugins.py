"""Plug-ins: a user's own codecs, policies, models, observers and network presets, everywhere a run goes.

A plug-in is a Python module that registers what it defines when it is imported::

    # my_codecs.py
    from thinwire.codecs import Codec, register

    @register
    class Sign(Codec): ...

Three ways reach it, and ``load_plugins`` (called by the CLI before it reads a config, so
by every torchrun rank too) takes all of them:
1. an installed package's entry point in the group ``thinwire.plugins``
   (``[project.entry-points."thinwire.plugins"] my = "my_codecs"`` in its pyproject);
2. ``--import my_codecs`` on the command line (repeatable);
3. ``$THINWIRE_IMPORT`` (comma-separated module names), which ``launch`` sets for its ranks
   to the modules that registered anything in this process. What a notebook or script
   defines itself lives in ``__main__``, which no other process can import: put it in a
   module.
"""

from __future__ import annotations

import importlib
import os
from importlib.metadata import entry_points

GROUP = "thinwire.plugins"
ENV = "THINWIRE_IMPORT"


def load_plugins(modules: list[str] | tuple[str, ...] = ()) -> list[str]:
    """Import every plug-in module (entry points, ``modules``, ``$THINWIRE_IMPORT``);
    returns their names. A module that cannot be imported is a ``ValueError`` naming it."""
    names = [ep.value for ep in entry_points(group=GROUP)]
    names += list(modules) + [m.strip() for m in os.environ.get(ENV, "").split(",") if m.strip()]
    loaded = []
    for name in dict.fromkeys(names):
        try:
            importlib.import_module(name)
        except ImportError as exc:
            raise ValueError(f"plug-in module {name!r} cannot be imported ({exc}); check --import, "
                             f"${ENV} or the {GROUP!r} entry points") from exc
        loaded.append(name)
    return loaded


def registering_modules() -> list[str]:
    """Modules outside thinwire whose codecs, policies or network presets are registered in
    this process: what another process (a torchrun rank) must import to know them."""
    from .algorithms.observers import OBSERVERS
    from .codecs import CODECS
    from .comm.network import REGISTERED_BY
    from .models import MODELS
    from .policies import POLICIES
    found = [cls.__module__ for cls in [*CODECS.values(), *POLICIES.values(), *MODELS.values(),
                                        *OBSERVERS.values()]] + sorted(REGISTERED_BY)
    # what __main__ (a script, a notebook) defines cannot be imported by another process; thinwire's own
    # modules are imported with it (a paper's observer reaches the ranks through ``observer_modules``)
    return [m for m in dict.fromkeys(found) if m and m != "__main__" and not m.startswith("thinwire")]


def observer_modules(config) -> list[str]:
    """The module that registers the observer ``config`` names (a paper's package), for its ranks.
    Only then: importing the papers validates their recipes, which compiles numba's parallel
    kernels, and numba's first parallel kernel resets the process's OpenMP thread count, which
    torch shares; a rank of another run would compute with other threads than it does alone."""
    from .algorithms.observers import make_observer
    spec = getattr(config.section, "observe", "")
    return [type(make_observer(spec)).__module__] if spec else []
