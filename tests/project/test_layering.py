"""The layering rules of CONTRIBUTING.md, kept by a test: ``django_bullq.core`` imports nothing
from Django, no import cycle is added (function-local imports count), and few sync/async twins
hold their logic twice, and modules stay small (issue 13)."""

from __future__ import annotations

import ast
import statistics
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "django_bullq"

#: Cycles that exist today and that the house redesign (issue 13) removes; none may be added,
#: and one that is gone must be taken off this list.
KNOWN_CYCLES: set[frozenset[str]] = set()

#: Most sync/async twin pairs of the package whose two halves both hold logic (issue 13).
MAX_THICK_TWINS = 8
#: In ``django_bullq.core`` only the executors (``drive``/``adrive``, ``QueueBase._batch``
#: and ``_read``, ``Scripts.run``/``arun``) and the producer's hot path, ``Queue.add``/``aadd``
#: (a generator of steps costs a single add about 7% CPU).
MAX_THICK_CORE_TWINS = 5
#: Issue 13's module targets: no module over this many lines, the median at most MEDIAN_LINES
#: (migrations excepted; they are generated).
MAX_MODULE_LINES = 500
MEDIAN_LINES = 120
#: Statements that make even a one-statement half hold logic.
CONTROL_FLOW = (
    ast.If,
    ast.For,
    ast.AsyncFor,
    ast.While,
    ast.Try,
    ast.With,
    ast.AsyncWith,
    ast.Match,
)


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


def holds_logic(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """More than one statement after the docstring, or any control flow."""
    body = function.body[1:] if ast.get_docstring(function) is not None else function.body
    return len(body) > 1 or any(isinstance(statement, CONTROL_FLOW) for statement in body)


def async_twin(name: str, names: set[str]) -> str | None:
    """The async twin of the sync function ``name`` among ``names``: ``aname``, or for a
    private one ``aname`` / ``_aname`` without its underscores (``_poll`` -> ``_apoll``)."""
    bare = name.lstrip("_")
    for twin in (f"a{name}", f"a{bare}", f"_a{bare}"):
        if twin in names and twin != name:
            return twin
    return None


def thick_twins(root: Path) -> list[str]:
    """``path:line Scope.name/aname`` of each twin pair under ``root`` whose halves both hold
    logic. A pair is a sync function and its :func:`async_twin`, a coroutine function, in one
    class or module (``add`` / ``aadd`` counts too)."""
    found: list[str] = []
    for path in sorted(root.rglob("*.py")):
        if "migrations" in path.parts:
            continue
        tree = ast.parse(path.read_text(), filename=str(path))
        scopes: list[ast.Module | ast.ClassDef] = [tree]
        scopes += [node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)]
        for scope in scopes:
            functions = {
                node.name: node
                for node in scope.body
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            }
            for name, function in functions.items():
                if isinstance(function, ast.AsyncFunctionDef):
                    continue
                twin = async_twin(name, set(functions))
                if (
                    twin
                    and isinstance(functions[twin], ast.AsyncFunctionDef)
                    and holds_logic(function)
                    and holds_logic(functions[twin])
                ):
                    where = getattr(scope, "name", "<module>")
                    found.append(
                        f"{path.relative_to(root.parent)}:{function.lineno} {where}.{name}/{twin}"
                    )
    return found


def test_thick_twins_finds_a_pair_written_twice(tmp_path: Path) -> None:
    (tmp_path / "mod.py").write_text(
        "class Q:\n"
        "    def get(self):\n        x = 1\n        return x\n"
        "    async def aget(self):\n        if True:\n            return 1\n"
        "    def put(self):\n        'Doc.'\n        return self._put()\n"
        "    async def aput(self):\n        x = 1\n        return x\n"
        "def _poll():\n    for _ in ():\n        pass\n"
        "async def _apoll():\n    while False:\n        pass\n"
    )
    assert thick_twins(tmp_path) == [
        f"{tmp_path.name}/mod.py:14 <module>._poll/_apoll",
        f"{tmp_path.name}/mod.py:2 Q.get/aget",
    ]


def test_core_twins_are_thin() -> None:
    """In the engine only the executors write a step twice; everything else is written once
    (a generator of steps, a Read, a Command or a Call) and run by them."""
    found = thick_twins(PACKAGE / "core")
    assert len(found) <= MAX_THICK_CORE_TWINS, "\n".join(found)


def test_package_twins_are_thin() -> None:
    """The whole package, executors and the few twins that must differ, within the ceiling."""
    found = thick_twins(PACKAGE)
    assert len(found) <= MAX_THICK_TWINS, "\n".join(found)


def module_lines() -> dict[str, int]:
    """Lines of each package module, migrations excepted (issue 13's measure)."""
    return {
        module_name(path): len(path.read_text().splitlines())
        for path in PACKAGE.rglob("*.py")
        if "migrations" not in path.parts
    }


def test_no_module_is_over_the_ceiling() -> None:
    """A module that outgrows MAX_MODULE_LINES holds more than one concept: split it."""
    sizes = module_lines()
    over = {name: n for name, n in sizes.items() if n > MAX_MODULE_LINES}
    assert over == {}, over


def test_median_module_is_small() -> None:
    sizes = module_lines()
    assert len(sizes) > 50  # the whole package was read
    assert statistics.median(sizes.values()) <= MEDIAN_LINES
