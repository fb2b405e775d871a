"""The import graph of the tree, read from source (nothing is imported to read it)."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
# Top-level package name -> the folder holding it.
PACKAGES = {"muster": ROOT / "libs" / "muster", "services": ROOT / "services"}


@dataclass(frozen=True)
class Import:
    source: str
    """The importing module, dotted."""
    target: str
    """The imported module (or the package a name was taken from), dotted."""
    line: int
    when: str
    """``"load"`` (runs when the source is imported), ``"call"`` (inside a function) or ``"typing"``
    (under ``if TYPE_CHECKING``: never runs)."""


def modules() -> dict[str, Path]:
    """Every module of ours, dotted name to file."""
    found = {}
    for top, folder in PACKAGES.items():
        for path in sorted(folder.rglob("*.py")):
            parts = [top, *path.relative_to(folder).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _resolve(source: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = source.split(".")
    if not is_package:
        base.pop()
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports_of(source: str, path: Path, known: dict[str, Path]) -> list[Import]:
    found: list[Import] = []
    is_package = path.name == "__init__.py"

    def visit(node: ast.AST, when: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = when
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and when == "load":
                inner = "call"
            elif isinstance(child, ast.If) and _is_type_checking(child):
                inner = "typing"
            if isinstance(child, ast.Import):
                found.extend(Import(source, alias.name, child.lineno, when) for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = _resolve(source, is_package, child)
                for alias in child.names:
                    full = f"{base}.{alias.name}"
                    found.append(Import(source, full if full in known else base, child.lineno, when))
            visit(child, inner)

    visit(ast.parse(path.read_text(), filename=str(path)), "load")
    return found


def imports(known: dict[str, Path]) -> list[Import]:
    """Every import of one of our modules by another, wherever it stands."""
    found = [i for source, path in known.items() for i in _imports_of(source, path, known)]
    return [i for i in found if i.target.split(".")[0] in PACKAGES]


def cycles(edges: list[Import]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm)."""
    graph: dict[str, set[str]] = {}
    for edge in edges:
        if edge.source != edge.target:
            graph.setdefault(edge.source, set()).add(edge.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                connect(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return found
