"""The house's floors (DESIGN.md): the engine sits below the codecs and imports nothing of
the workbench but ``paths``, and the workbench reaches the engine only through the names
``thinwire.engine`` exports."""

import ast
from pathlib import Path

import thinwire
import thinwire.engine

LIB = Path(thinwire.__file__).parent


def _imports(path: Path, source: str | None = None) -> list[tuple[str, list[str], int]]:
    """(absolute module, imported names, line) of every import in one library file."""
    package = list(path.relative_to(LIB.parent).parts[:-1])  # a module's package, or an __init__'s own
    found = []
    for node in ast.walk(ast.parse(path.read_text() if source is None else source)):
        if isinstance(node, ast.Import):
            found += [(alias.name, [], node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            found.append((module, [alias.name for alias in node.names], node.lineno))
    return found


def _offenders(files, allowed) -> list[str]:
    return [f"{path.relative_to(LIB)}:{line}: {module} {names}"
            for path in files for module, names, line in _imports(path) if not allowed(module, names)]


def test_the_workbench_imports_only_the_engines_public_names():
    outside = [p for p in LIB.rglob("*.py") if "engine" not in p.relative_to(LIB).parts]
    public = set(thinwire.engine.__all__)

    def allowed(module, names):
        if module.startswith("thinwire.engine."):
            return False
        return module != "thinwire.engine" or set(names) <= public

    assert len(outside) > 100
    assert _offenders(outside, allowed) == []


def test_the_engine_imports_nothing_above_it():
    inside = list((LIB / "engine").rglob("*.py"))

    def allowed(module, names):
        return not module.startswith("thinwire") or module.startswith("thinwire.engine") or module == "thinwire.paths"

    assert len(inside) > 40
    assert _offenders(inside, allowed) == []


def test_the_check_reads_relative_imports_as_python_does():
    """A codec reaching into ``engine.kernels`` is caught; its public names pass."""
    codec = LIB / "codecs" / "dense" / "fp32.py"
    assert any(m == "thinwire.engine" and "stream" in names for m, names, _ in _imports(codec))
    found = _imports(codec, "from ...engine.kernels import stream\nfrom ...engine import Payload\nfrom . import bf16\n")
    assert [m for m, _, _ in found] == ["thinwire.engine.kernels", "thinwire.engine", "thinwire.codecs.dense"]
    init = LIB / "engine" / "__init__.py"
    assert _imports(init, "from .kernels import bitpack\n")[0][0] == "thinwire.engine.kernels"


def test_no_kernel_module_and_its_device_twin_import_each_other():
    """Host and device kernels meet in ``dispatch`` only: no circle among the kernel modules,
    function-level imports included (``bitpack`` once imported ``torch_pack``, which imports it)."""
    folder = LIB / "engine" / "kernels"
    graph = {}
    for path in folder.glob("*.py"):
        name = f"thinwire.engine.kernels.{path.stem}"
        graph[name] = set()
        for module, names, _ in _imports(path):
            for target in [module, *(f"{module}.{n}" for n in names)]:
                if target.startswith("thinwire.engine.kernels.") and target != name:
                    graph[name].add(target)
    seen, circles = {}, []

    def visit(node, trail):
        if node in trail:
            circles.append(trail[trail.index(node):] + [node])
            return
        if seen.get(node):
            return
        for nxt in sorted(graph.get(node, ())):
            visit(nxt, trail + [node])
        seen[node] = True

    for node in sorted(graph):
        visit(node, [])
    assert len(graph) > 40 and circles == []
    assert "thinwire.engine.kernels.torch_pack" in graph["thinwire.engine.kernels.dispatch"]
