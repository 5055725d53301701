"""A notebook's parameters checked against what papermill injected.

papermill writes ``-p name value`` into a cell after the ``parameters`` cell and runs it,
whatever ``name`` is: a misspelt ``-p wokers 8`` would run with the default ``workers``
and exit 0. ``check_parameters(In)``, first in a notebook's validation cell, reads the
cells the kernel ran (IPython's ``In``), takes the declared parameters from the
``parameters`` cell (``name: type = value  # help``, the block ``papermill
--help-notebook`` lists) and refuses an injected name that is not declared, or a value
whose type is not the declared one, naming it and the allowed ones.
"""

from __future__ import annotations

import ast

INJECTED_HEADER = "# Parameters"  # the first line of papermill's injected cell


def _assignments(source: str) -> dict[str, tuple[str | None, object]] | None:
    """{name: (annotation, literal value)} when every statement of ``source`` assigns a
    literal to a name; None otherwise."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    found = {}
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            name, annotation, value = node.target.id, ast.unparse(node.annotation), node.value
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name, annotation, value = node.targets[0].id, None, node.value
        else:
            return None
        try:
            found[name] = (annotation, ast.literal_eval(value))
        except ValueError:
            return None
    return found or None


TYPES = {"int": int, "float": (int, float), "str": str, "bool": bool}


def check_parameters(inputs: list[str]) -> dict:
    """The notebook's parameters, after checking the injected ones; ``inputs`` is ``In``."""
    declared = injected = None
    for source in inputs:
        if source.lstrip().startswith(INJECTED_HEADER):
            injected = _assignments(source) or {}
        elif declared is None:
            declared = _assignments(source)
    if declared is None:
        raise ValueError("no parameters cell ran before this check")
    for name, (_, value) in (injected or {}).items():
        if name not in declared:
            raise ValueError(f"unknown notebook parameter {name!r} (-p {name} {value!r}); the parameters are: "
                             f"{', '.join(declared)}")
        annotation = declared[name][0]
        allowed = TYPES.get(annotation or "")
        wrong_bool = isinstance(value, bool) and annotation in ("int", "float")
        if allowed is not None and (not isinstance(value, allowed) or wrong_bool):
            raise ValueError(f"{name}={value!r} is not allowed: parameter {name} is a {annotation} "
                             f"(default {declared[name][1]!r})")
    return {name: (injected or {}).get(name, (None, value))[1] for name, (_, value) in declared.items()}
