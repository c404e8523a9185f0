"""The layering rules of CONTRIBUTING.md, kept by a test: ``django_bullq.core`` imports nothing
from Django, and no import cycle is added (function-local imports count)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "django_bullq"

#: Cycles that exist today and that the house redesign (issue 13) removes; none may be added,
#: and one that is gone must be taken off this list.
KNOWN_CYCLES: set[frozenset[str]] = set()


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def runtime_nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node of ``tree`` except what sits under ``if TYPE_CHECKING:``."""
    nodes: list[ast.AST] = []
    todo = [tree]
    while todo:
        node = todo.pop()
        nodes.append(node)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            todo.extend(node.orelse)
            continue
        todo.extend(ast.iter_child_nodes(node))
    return nodes


def imports_of(path: Path, modules: set[str]) -> set[str]:
    """Package modules imported anywhere in ``path`` at run time (top level and inside
    functions; not under ``if TYPE_CHECKING:``)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in runtime_nodes(ast.parse(path.read_text(), filename=str(path))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            # ``from pkg import mod`` imports the module; ``from pkg import name`` the package
            targets = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                for alias in node.names
            ]
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def cycles() -> set[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    paths = {module_name(p): p for p in PACKAGE.rglob("*.py") if "migrations" not in p.parts}
    graph = {name: imports_of(path, set(paths)) for name, path in paths.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: set[frozenset[str]] = set()

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                found.add(frozenset(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for node in graph:
        if node not in index:
            visit(node)
    return found


def test_core_imports_nothing_from_django() -> None:
    """Every module of ``django_bullq.core`` imports with Django made unimportable."""
    names = sorted(module_name(p) for p in (PACKAGE / "core").rglob("*.py"))
    probe = (
        f"import sys; sys.modules['django'] = None\nfor name in {names!r}:\n    __import__(name)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=PACKAGE.parent,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr


def test_no_import_cycle_is_added() -> None:
    found = cycles()
    assert found - KNOWN_CYCLES == set(), sorted(map(sorted, found - KNOWN_CYCLES))
    assert KNOWN_CYCLES - found == set(), "a known cycle is gone: take it off KNOWN_CYCLES"
