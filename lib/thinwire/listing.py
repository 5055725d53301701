"""What exists, read from the registries: the codecs, policies, algorithms, models and the
papers' recipes, each with its arguments and their defaults and one line of its docstring
(``thinwire codecs|policies|algorithms|models|recipes``). Nothing here is a second list: a
plug-in registered in the process (``--import``) is listed like a built-in."""

from __future__ import annotations

import dataclasses
import inspect
import re
import sys

from .spec_syntax import parameter_text


# a sentence ends at a full stop before a capital, not after an abbreviation (Sec. 3, et al. 2017)
_SENTENCE_END = re.compile(r"(?<!\bSec)(?<!\bEq)(?<!\bal)(?<!\bAlg)(?<!\bFig)(?<!\be\.g)(?<!\bi\.e)\.\s+(?=[A-Z])")


def one_line(obj, width: int = 100) -> str:
    """The first sentence of ``obj``'s docstring (a class's, else its module's), at most
    ``width`` characters."""
    module = None if inspect.ismodule(obj) else sys.modules.get(obj.__module__)
    for doc in (obj.__doc__, getattr(module, "__doc__", None)):
        paragraph = (doc or "").strip().split("\n\n")[0]
        text = " ".join(paragraph.replace("``", "").split())
        if text:
            sentence = _SENTENCE_END.split(text, 1)[0].rstrip(".:")
            return sentence if len(sentence) <= width else sentence[:width - 3].rstrip() + "..."
    return ""


def _signature(function, skip=("self", "seed")) -> str:
    return ", ".join(parameter_text(p) for p in inspect.signature(function).parameters.values() if p.name not in skip)


def _fields(cls, skip=()) -> str:
    def default(f):
        if f.default is not dataclasses.MISSING:
            return f"={f.default!r}"
        if f.default_factory is not dataclasses.MISSING:
            return f"={f.default_factory()!r}"
        return ""
    return ", ".join(f"{f.name}{default(f)}" for f in dataclasses.fields(cls) if f.init and f.name not in skip)


def codecs() -> list[tuple[str, str, str]]:
    """(name, arguments with defaults, one line) of every registered codec."""
    from .codecs import CODECS
    return [(name, _signature(cls), one_line(cls)) for name, cls in sorted(CODECS.items())]


def policies() -> list[tuple[str, str, str]]:
    """The same for every registered policy (the seed comes from the run)."""
    from .policies import POLICIES
    return [(name, _signature(cls), one_line(cls)) for name, cls in sorted(POLICIES.items())]


def algorithms() -> list[tuple[str, str, str]]:
    """Every algorithm with its section's fields (``--set field=value``) and defaults."""
    from .algorithms import ALGORITHMS
    return [(name, _fields(cls.Section), one_line(sys.modules[cls.__module__]))
            for name, cls in sorted(ALGORITHMS.items())]


def models() -> list[tuple[str, str, str]]:
    """Every model spec with its options and defaults."""
    from .models import MODELS
    return [(name, _fields(cls, skip=("name",)), one_line(cls)) for name, cls in sorted(MODELS.items())]


def recipes() -> list[tuple[str, str, str]]:
    """Every paper's recipes as ``paper:label``, with their algorithm and settings
    (``thinwire run --recipe paper:label``)."""
    from .papers import PAPERS, paper
    rows = []
    for name in PAPERS:
        for label, recipe in paper(name).recipes.items():
            settings = ", ".join(f"{k}={v!r}" for k, v in recipe.settings.items())
            rows.append((f"{name}:{label}", "", f"{recipe.algorithm}: {settings}" if settings else recipe.algorithm))
    return rows


LISTS = {"codecs": codecs, "policies": policies, "algorithms": algorithms, "models": models, "recipes": recipes}


def render(rows: list[tuple[str, str, str]]) -> str:
    """Each row as ``name(arguments)`` then its line, indented below it."""
    out = []
    for name, arguments, line in rows:
        out.append(f"{name}({arguments})" if arguments or not line else name)
        if line:
            out.append(f"    {line}")
    return "\n".join(out) + "\n"
