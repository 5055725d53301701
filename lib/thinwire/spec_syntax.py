"""The text form shared by codec and policy specs: ``name`` or ``name(arg=literal, ...)``,
with nested specs as positional arguments (``ef(topk(ratio=0.01))``)."""

from __future__ import annotations

import ast


def parse(spec, what: str) -> ast.AST:
    """The expression node of ``spec``; ``ValueError`` when it is not a spec."""
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"{what} spec must be a non-empty string, got {spec!r}")
    try:
        return ast.parse(spec.strip(), mode="eval").body
    except SyntaxError as exc:
        raise ValueError(f"{what} spec {spec!r} is not of the form name(arg=value, ...): {exc.msg}") from None


def call_parts(node: ast.AST, spec: str, what: str, known) -> tuple[str, list[ast.AST], dict]:
    """(name, positional argument nodes, keyword literals) of one call in a spec."""
    if isinstance(node, ast.Name):
        name, args, keywords = node.id, [], []
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        name, args, keywords = node.func.id, node.args, node.keywords
    else:
        raise ValueError(f"{what} spec {spec!r}: expected a {what} name or call, got {ast.unparse(node)!r}")
    if name not in known:
        raise ValueError(f"{what} spec {spec!r}: unknown {what} {name!r}; known: {sorted(known)} (a {what} of "
                         "your own must be registered in every process: thinwire.plugins, --import MODULE)")
    if any(kw.arg is None for kw in keywords):
        raise ValueError(f"{what} spec {spec!r}: ** arguments are not allowed")
    names = [kw.arg for kw in keywords]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ValueError(f"{what} spec {spec!r}: keyword(s) {repeated} given more than once; give each once")
    try:
        values = {kw.arg: ast.literal_eval(kw.value) for kw in keywords}
    except ValueError:
        raise ValueError(f"{what} spec {spec!r}: keyword values must be literals") from None
    return name, list(args), values
