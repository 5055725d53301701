"""The text form shared by codec and policy specs: ``name`` or ``name(arg=literal, ...)``,
with nested specs as positional arguments (``ef(topk(ratio=0.01))``)."""

from __future__ import annotations

import ast
import inspect

from .validation import did_you_mean


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
        raise ValueError(f"{what} spec {spec!r}: unknown {what} {name!r}{did_you_mean([name], known)}; known: "
                         f"{sorted(known)} (a {what} of your own must be registered in every process: "
                         "thinwire.plugins, --import MODULE)")
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


def parameter_text(p: inspect.Parameter) -> str:
    """One parameter as a spec's reader writes it: ``name``, ``name=default``, ``*name``."""
    if p.kind is p.VAR_POSITIONAL:
        return f"*{p.name}"
    if p.kind is p.VAR_KEYWORD:
        return f"**{p.name}"
    return p.name if p.default is p.empty else f"{p.name}={p.default!r}"


def check_keywords(spec, what: str, name: str, function, values: dict, skip: tuple = ()) -> None:
    """``ValueError`` when ``values`` holds a keyword that ``function`` (a class: its
    ``__init__``) does not take, naming the closest ones and every keyword it takes with its
    default; a function that takes ``**kwargs`` takes any."""
    params = [p for p in inspect.signature(function).parameters.values() if p.name not in skip]
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return
    allowed = [p for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    unknown = sorted(set(values) - {p.name for p in allowed})
    if unknown:
        takes = ", ".join(parameter_text(p) for p in allowed)
        raise ValueError(f"{what} spec {spec!r}: {name} takes no keyword {', '.join(map(repr, unknown))}"
                         f"{did_you_mean(unknown, [p.name for p in allowed])}; its keywords: "
                         + (takes or "none"))


def dataclass_call(spec, what: str, known: dict):
    """(class, keyword values) of a spec naming a dataclass in ``known`` whose fields are
    its options (models, observers); ``ValueError`` for positional or unknown options."""
    import dataclasses
    name, args, values = call_parts(parse(spec, what), spec, what, known)
    cls = known[name]
    allowed = [f.name for f in dataclasses.fields(cls)]
    unknown = sorted(set(values) - set(allowed))
    if args or unknown:
        raise ValueError((f"unknown option(s) {unknown}{did_you_mean(unknown, allowed)}" if unknown
                          else "positional arguments") + f"; {name} takes "
                         + (f"keyword options {allowed}" if allowed else f"no options (it is a fixed {what})"))
    return cls, values


def dataclass_build(spec, what: str, known: dict, param: str):
    """The dataclass a spec names, built from its options; any ``ValueError`` (a bad
    option, or one the class's own checks refuse) is re-raised naming ``param=spec``."""
    try:
        cls, values = dataclass_call(spec, what, known)
        return cls(**values)
    except ValueError as exc:
        raise ValueError(f"{param}={spec!r} is not allowed: {exc}") from None


def dataclass_text(name: str, obj) -> str:
    """The canonical text of a dataclass spec: ``name``, with the fields that differ from
    their defaults, in field order."""
    import dataclasses
    args = [f"{f.name}={getattr(obj, f.name)!r}" for f in dataclasses.fields(obj) if getattr(obj, f.name) != f.default]
    return f"{name}({', '.join(args)})" if args else name
