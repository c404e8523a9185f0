"""Read the header of a ``lua/*.lua`` script: its KEYS and ARGV lines (test helper)."""

from __future__ import annotations

import re
from pathlib import Path

from django_bullq.core.scripts import lua_dir

SCRIPT_FILES = sorted(lua_dir().glob("*.lua"))
_HEADER = re.compile(r"\A--\[\[(.*?)\]\]", re.DOTALL)
_KEY_DOC = re.compile(r"KEYS\[(\d+)(?:\.\.(\d+))?\]")
_ARGV_LINE = re.compile(r"^\s*ARGV\[(\d+)(\.\.(\d*))?\]\s+(\w+)", re.MULTILINE)


def header(path: Path) -> str:
    match = _HEADER.match(path.read_text())
    assert match, f"{path.name} must open with a --[[ header ]]"
    return match.group(1)


def strip_comments(lua: str) -> str:
    return re.sub(r"--[^\n]*", "", re.sub(r"--\[\[.*?\]\]", "", lua, flags=re.DOTALL))


def documented_keys(text: str) -> set[int]:
    found: set[int] = set()
    for first, last in _KEY_DOC.findall(text):
        found.update(range(int(first), int(last or first) + 1))
    return found


def snake(name: str) -> str:
    """``keyPrefix`` → ``key_prefix``; ``moveToFinished`` → ``move_to_finished``."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def argv_entries(path: Path) -> list[tuple[str, int, int | None]]:
    """The header's ARGV lines in order: (name, first index, last index; None = open range)."""
    entries = []
    for first, dots, last, name in _ARGV_LINE.findall(header(path)):
        end = (int(last) if last else None) if dots else int(first)
        entries.append((name, int(first), end))
    return entries
