"""Imports go one way (docs/architecture.md, "Rules of the house"), read from the code's own import
statements, lazy ones included: no module of c1 imports one that imports it back, and the lower
layers import nothing above them."""

from __future__ import annotations

import ast
from pathlib import Path

C1 = Path(__file__).resolve().parents[1] / "c1"


def _module(path: Path) -> str:
    parts = path.relative_to(C1.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports() -> dict[str, set[str]]:
    """Each module of c1 → the modules of c1 it imports (``from c1.x import y`` names c1.x.y when that is a module)."""
    modules = {_module(p): p for p in C1.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
                targets.add(base)
                targets.update(f"{base}.{a.name}" for a in node.names)
        graph[name] = {t for t in targets if t in modules and t != name}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while True:
                w = stack.pop()
                part.append(w)
                if w == v:
                    break
            if len(part) > 1:
                out.append(sorted(part))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _reaching(graph: dict[str, set[str]], low: str, high: tuple[str, ...]) -> list[str]:
    def inside(name: str, prefix: str) -> bool:
        return name == prefix or name.startswith(prefix + ".")

    return sorted(f"{a} -> {b}" for a, targets in graph.items() if inside(a, low)
                  for b in targets if any(inside(b, h) for h in high))


def test_the_reader_finds_the_imports_it_checks():
    graph = _imports()
    assert "c1.store.collection" in graph["c1.index.indexer"] and "c1.config" in graph["c1.cli"]
    assert "c1.commands.status" in graph["c1.cli"]  # a lazy import, inside the command


def test_no_module_imports_one_that_imports_it_back():
    assert _cycles(_imports()) == []


def test_no_arrow_runs_up_from_the_lower_layers():
    graph = _imports()
    assert _reaching(graph, "c1.store", ("c1.retrieval", "c1.index", "c1.agent", "c1.commands", "c1.service",
                                         "c1.cli")) == []
    assert _reaching(graph, "c1.index", ("c1.retrieval", "c1.agent", "c1.commands", "c1.service", "c1.cli")) == []
    assert _reaching(graph, "c1.retrieval", ("c1.agent", "c1.commands", "c1.service", "c1.cli")) == []
    assert _reaching(graph, "c1.service", ("c1.commands", "c1.cli")) == []
    for family in ("c1.model", "c1.train", "c1.eval", "c1.daemon", "c1.terminal"):  # the flags read their settings
        assert _reaching(graph, family, ("c1.commands", "c1.cli")) == [], family
    assert _reaching(graph, "c1.manual", ("c1.cli", "c1.commands")) == []
    assert graph["c1.config"] <= {"c1.errors"}, "the settings import no store module (nor any other part of c1)"
