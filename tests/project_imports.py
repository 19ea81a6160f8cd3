"""The project's own import graph, read from the source with ``ast`` (nothing is imported).

Every ``import`` counts, wherever it stands: at module level, inside a function (a lazy import is
still a dependency) or under ``TYPE_CHECKING``. Module names are the installed ones (``pqb.builders…``).
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = {
    "builders": "pqb.builders",
    "harness": "pqb.harness",
    "pqb_dataset": "pqb.dataset",
    "pqb_package": "pqb",
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([FOLDERS[parts[0]], *parts[1:]])


@cache
def modules() -> dict[str, Path]:
    out = {}
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if (
                "pqb_robustness" in path.parts
            ):  # the ``evaluate`` script: loaded by path, not a package module
                continue
            out[module_name(path)] = path
    return out


def _resolve(name: str, known: dict[str, Path]) -> str | None:
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


@cache
def import_graph() -> dict[str, frozenset[str]]:
    """module -> the project modules it imports (``from pkg import mod`` counts ``pkg.mod``)."""
    known = modules()
    graph: dict[str, frozenset[str]] = {}
    for mod, path in known.items():
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [f"{node.module}.{a.name}" for a in node.names] + [node.module]
            else:
                continue
            for t in targets:
                r = _resolve(t, known) if t.startswith("pqb.") else None
                if r and r != mod and not mod.startswith(r + "."):  # a parent package is always imported
                    deps.add(r)
        graph[mod] = frozenset(deps)
    return graph


def cycles(graph: dict[str, frozenset[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            # a package's __init__ importing its own submodules is not a circle
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out
