"""The wheel ships the Lua scripts (django_bullq/lua, includes too) and py.typed, and works."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(ROOT)],
        check=True,
        timeout=300,
    )
    (built,) = out.glob("django_bullq-*.whl")
    return built


def test_wheel_ships_every_lua_file_and_py_typed(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    scripts = sorted(p.name for p in (ROOT / "lua").glob("*.lua"))
    includes = sorted(p.name for p in (ROOT / "lua" / "includes").glob("*.lua"))
    assert scripts and includes

    assert {f"django_bullq/lua/{n}" for n in scripts} <= names
    assert {f"django_bullq/lua/includes/{n}" for n in includes} <= names
    assert "django_bullq/py.typed" in names
    assert "django_bullq/core/scripts.py" in names


def test_wheel_lua_files_are_byte_identical(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as zf:
        for path in [*(ROOT / "lua").glob("*.lua"), *(ROOT / "lua" / "includes").glob("*.lua")]:
            inside = f"django_bullq/lua/{path.relative_to(ROOT / 'lua').as_posix()}"
            assert zf.read(inside) == path.read_bytes(), inside


def test_installed_wheel_finds_and_expands_its_scripts(wheel: Path, tmp_path: Path) -> None:
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(tmp_path)
    probe = (
        "from django_bullq.core import scripts as s; "
        "d = s.lua_dir(); srcs = s.load_sources(); "
        "print(d); print(len(srcs)); "
        "print(all('@include' not in x.source for x in srcs.values()))"
    )
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=tmp_path,
        env=env,
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    )
    lua_path, count, expanded = done.stdout.split()
    assert Path(lua_path) == tmp_path / "django_bullq" / "lua"
    assert int(count) == len(list((ROOT / "lua").glob("*.lua")))
    assert expanded == "True"


def test_wheel_ships_admin_templates_and_migrations(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for page in ("base", "overview", "queue", "job", "confirm"):
        assert f"django_bullq/templates/admin/django_bullq/{page}.html" in names
    assert "django_bullq/migrations/0001_initial.py" in names
    assert "django_bullq/admin/options.py" in names
    # the pages' script and stylesheet are files (no inline code: a strict CSP admits them)
    for static in ("js/bullq-events.js", "js/bullq-admin.js", "css/bullq-admin.css"):
        assert f"django_bullq/static/django_bullq/{static}" in names


def test_distributions_pass_twine_check_strict(tmp_path: Path) -> None:
    """The sdist and the wheel carry valid metadata (README rendering, license file,
    classifiers), as PyPI will check them: ``twine check --strict``."""
    subprocess.run(
        [sys.executable, "-m", "build", "--sdist", "--wheel", "--outdir", str(tmp_path), str(ROOT)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    (sdist,), (wheel_file,) = tmp_path.glob("*.tar.gz"), tmp_path.glob("*.whl")
    built = [sdist, wheel_file]
    done = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", *map(str, built)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    with zipfile.ZipFile(wheel_file) as zf:
        metadata = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        text = zf.read(metadata).decode()
        assert any(n.endswith(".dist-info/licenses/LICENSE") for n in zf.namelist())
    assert "Requires-Python: >=3.12" in text and "License-Expression: MIT" in text
    assert "django-environ" not in text.split("Provides-Extra: example")[0]
