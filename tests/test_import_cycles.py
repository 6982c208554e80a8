"""No import circles inside the package: every `import` statement (at module level and inside
functions, lazy imports included; `if TYPE_CHECKING:` blocks excluded) is an edge, and the graph
of partitioner's modules must be acyclic (Tarjan's strongly connected components)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import partitioner

ROOT = Path(partitioner.__file__).parent


def _modules() -> dict[str, Path]:
    out = {}
    for p in ROOT.rglob("*.py"):
        parts = list(p.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = p
    return out


def _edges(name: str, path: Path, mods: dict[str, Path]) -> set[str]:
    """The package modules `name` imports (a name imported from a package counts as its
    submodule when one exists: `from partitioner.export import single`)."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]

    def resolve(dotted: str) -> str | None:
        while dotted and dotted not in mods:
            dotted = dotted.rpartition(".")[0]
        return dotted or None

    out: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            return
        if isinstance(node, ast.Import):
            out.update(r for a in node.names if (r := resolve(a.name)))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
            for a in node.names:
                full = f"{base}.{a.name}"
                r = full if full in mods else resolve(base)
                if r:
                    out.add(r)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    out.discard(name)
    return out


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (iterative Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return found


def test_finder_sees_a_circle():
    assert import_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert import_cycles({"a": {"b"}, "b": set()}) == []


def test_package_has_no_import_circles():
    mods = _modules()
    graph = {name: _edges(name, path, mods) for name, path in mods.items()}
    assert "partitioner.problem" in graph["partitioner.solvers.budget"]  # the walker sees imports
    assert import_cycles(graph) == []


@pytest.mark.parametrize("module", ["partitioner.solvers", "partitioner.costs", "partitioner.deploy"])
def test_no_solver_imports_an_exporter(module):
    """Solvers, costs and the deploy search read engine facts from the engine records
    (presets/engines.yaml), never from an export module."""
    mods = _modules()
    bad = {name: sorted(d for d in _edges(name, path, mods) if d.startswith("partitioner.export"))
           for name, path in mods.items() if name == module or name.startswith(module + ".")}
    assert {k: v for k, v in bad.items() if v} == {}
