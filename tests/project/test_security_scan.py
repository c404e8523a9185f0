"""Security: the package never deserialises with pickle & co. nor evaluates strings."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: Modules whose use means untrusted bytes could become code.
FORBIDDEN_MODULES = {
    "pickle",
    "cPickle",
    "_pickle",
    "marshal",
    "shelve",
    "dill",
    "cloudpickle",
    "jsonpickle",
}
FORBIDDEN_CALLS = {"eval", "exec", "compile", "__import__"}
#: In Lua: loadstring/load turn text into code, and the cjson/cmsgpack-free deserialisers
#: BullMQ never needs; ``dofile`` reads code from disk.
LUA_FORBIDDEN = re.compile(r"\b(loadstring|load|dofile|loadfile)\s*\(")


def _python_problems(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    problems = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name.split(".")[0] for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [(node.module or "").split(".")[0]]
        else:
            names = []
        problems += [f"{path}:{node.lineno} imports {n}" for n in names if n in FORBIDDEN_MODULES]
        if isinstance(node, ast.Call):
            func = node.func
            name = (
                func.id
                if isinstance(func, ast.Name)
                else (func.attr if isinstance(func, ast.Attribute) else "")
            )
            builtin = isinstance(func, ast.Name) or (
                isinstance(func, ast.Attribute)
                and isinstance(func.value, ast.Name)
                and func.value.id == "builtins"
            )  # re.compile() is fine, compile() is not
            if name in FORBIDDEN_CALLS and builtin:
                problems.append(f"{path}:{node.lineno} calls {name}()")
            if (
                name in ("load", "load_all")
                and isinstance(func, ast.Attribute)
                and isinstance(func.value, ast.Name)
                and func.value.id == "yaml"
            ):
                problems.append(f"{path}:{node.lineno} calls yaml.{name}() (use safe_load)")
    return problems


def test_package_has_no_pickle_marshal_shelve_yaml_load_or_eval() -> None:
    files = sorted((ROOT / "django_bullq").rglob("*.py"))
    assert len(files) > 20  # the scan sees the package
    problems = [p for f in files for p in _python_problems(f)]
    assert problems == []


def test_lua_scripts_never_turn_text_into_code() -> None:
    files = sorted((ROOT / "lua").rglob("*.lua"))
    assert len(files) > 20
    problems = [
        f"{f}:{n}: {line.strip()}"
        for f in files
        for n, line in enumerate(f.read_text().splitlines(), 1)
        if LUA_FORBIDDEN.search(line.split("--", 1)[0])
    ]
    assert problems == []


def test_the_scan_catches_what_it_looks_for(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        "import pickle\nfrom marshal import loads\nimport yaml\n"
        "yaml.load('x')\neval('1')\nshelve = __import__('shelve')\n"
        "import re\nre.compile('x')\n"
    )
    found = _python_problems(bad)
    assert [p.split(" ", 1)[1] for p in found] == [
        "imports pickle",
        "imports marshal",
        "calls yaml.load() (use safe_load)",
        "calls eval()",
        "calls __import__()",
    ]
