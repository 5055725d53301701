"""A notebook's parameters checked against what papermill injected.

papermill writes ``-p name value`` into a cell after the ``parameters`` cell and runs it,
whatever ``name`` is: a misspelt ``-p wokers 8`` would run with the default ``workers``
and exit 0. ``check_parameters(globals(), In)``, first in a notebook's validation cell:
1. takes the declared parameters from the annotations of the ``parameters`` cell
   (``name: type = value  # help``, the block ``papermill --help-notebook`` lists);
2. refuses a name in papermill's injected cell (found among the cells the kernel ran,
   IPython's ``In``) that is not declared, naming it and the declared ones;
3. refuses a parameter whose value is not of its declared type.
A kernel that keeps no history (nbval) has no injected cell to read: step 2 then has
nothing to check.
"""

from __future__ import annotations

import ast

from .validation import did_you_mean

INJECTED_HEADER = "# Parameters"  # the first line of papermill's injected cell
TYPES = {int: (int,), float: (int, float), str: (str,), bool: (bool,)}


def _assigned(source: str) -> dict:
    """{name: literal} of a cell of plain assignments (papermill's injected cell)."""
    found = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                found[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                found[node.targets[0].id] = ast.unparse(node.value)
    return found


def check_parameters(namespace: dict, inputs: list[str] = ()) -> dict:
    """The notebook's parameters {name: value}, after the checks above; ``namespace`` is
    ``globals()``, ``inputs`` is ``In``."""
    declared = dict(namespace.get("__annotations__") or {})
    if not declared:
        raise ValueError("no typed parameters cell ran before this check (name: type = value  # help)")
    for source in inputs:
        if source.lstrip().startswith(INJECTED_HEADER):
            for name, value in _assigned(source).items():
                if name not in declared:
                    raise ValueError(f"unknown notebook parameter {name!r} (-p {name} {value!r})"
                                     f"{did_you_mean([name], declared)}; the parameters are: {', '.join(declared)}")
    values = {name: namespace.get(name) for name in declared}
    for name, kind in declared.items():
        value, allowed = values[name], TYPES.get(kind, (kind,) if isinstance(kind, type) else (object,))
        if not isinstance(value, allowed) or (isinstance(value, bool) and kind in (int, float)):
            raise ValueError(f"{name}={value!r} is not allowed: parameter {name} is a "
                             f"{getattr(kind, '__name__', kind)}")
    return values


def injected(inputs: list[str] = ()) -> dict:
    """{name: value} that papermill injected (``-p name value``), from IPython's ``In``; {}
    for a kernel that keeps no history. A notebook quotes a committed long run only where
    nothing beyond the names that run allows was set (``quotes_apply``)."""
    found = {}
    for source in inputs:
        if source.lstrip().startswith(INJECTED_HEADER):
            found.update(_assigned(source))
    return found


def quotes_apply(profile: str, inputs: list[str], allowed: set[str]) -> bool:
    """Whether a notebook at ``profile`` may quote a long run executed at the default profile
    with the notebook's default parameters: only at the default profile, with no parameter
    set beyond ``allowed`` (those that select which runs are made, not how)."""
    return profile == "default" and set(injected(inputs)) <= set(allowed) | {"profile"}
