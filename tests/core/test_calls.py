"""The script-call layer (django_bullq/core/calls): each builder against its script's header.

Every ``lua/verbNoun-N.lua`` has exactly one builder, ``calls.verb_noun``; its keyword
arguments (those of a ``**kwargs: Unpack[...]`` first) are the header's ARGV names (snake_case,
``keyPrefix`` taken from the queue keys) in the header's order, and the call it builds has N
KEYS and as many ARGV as the header lists.
"""

from __future__ import annotations

import inspect
import typing
from pathlib import Path
from typing import Any

import pytest

from django_bullq.core.calls import (
    Call,
    Command,
    Step,
    Steps,
    adrive,
    builders,
    drive,
    queue_builders,
)
from django_bullq.core.keys import QueueKeys
from tests.support.lua_headers import SCRIPT_FILES, argv_entries, snake

KEYS = QueueKeys("q")
KEYWORD_ONLY = inspect.Parameter.KEYWORD_ONLY
#: Values for arguments a dummy string cannot stand for.
SAMPLES: dict[str, Any] = {
    "kept": (0, 0, 0, 0),
    "pairs": ("1", "t1", "2", "t2"),
    "fields_and_ids": ("name", "data", "1", "2"),
}
#: The modules of the builders (one per script, spread by subject).
BUILDER_MODULES = (builders, queue_builders)


def _script(path: Path) -> tuple[str, int]:
    name, num_keys = path.stem.rsplit("-", 1)
    return name, int(num_keys)


def _builders() -> dict[str, Any]:
    found: dict[str, Any] = {}
    for module in BUILDER_MODULES:
        for name, fn in inspect.getmembers(module, inspect.isfunction):
            if fn.__module__ == module.__name__ and not name.startswith("_") and name != "key_set":
                assert name not in found, f"two builders of {name}"
                found[name] = fn
    return found


def test_every_script_has_exactly_one_builder_and_every_builder_a_script() -> None:
    scripts = {snake(_script(p)[0]) for p in SCRIPT_FILES}
    assert set(_builders()) == scripts


@pytest.mark.parametrize("path", SCRIPT_FILES, ids=lambda p: p.name)
def test_builder_matches_the_script_header(path: Path) -> None:
    name, num_keys = _script(path)
    builder = _builders()[snake(name)]
    params = inspect.signature(builder).parameters.values()
    kw_only = [*_unpacked(builder), *(p.name for p in params if p.kind is KEYWORD_ONLY)]
    entries = argv_entries(path)
    assert kw_only == [snake(n) for n, _, _ in entries if n != "keyPrefix"], name

    positional = [p.name for p in params if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD]
    values = {p: SAMPLES.get(p, f"<{p}>") for p in [*positional[1:], *kw_only]}
    call = builder(KEYS, **values)
    assert isinstance(call, Call)
    assert call.script == name
    assert len(call.keys) == num_keys
    assert all(k.startswith("bull:q:") for k in call.keys)
    width = {n: (len(SAMPLES[snake(n)]) if last != first else 1) for n, first, last in entries}
    assert len(call.args) == sum(width.values()), name
    for argv, first, _ in entries:
        expected = KEYS.key_prefix if argv == "keyPrefix" else values[snake(argv)]
        got = call.args[first - 1 : first - 1 + width[argv]]
        # a flag is sent as "1" / "0"; anything else as given, at the header's index
        assert got in ((expected,), tuple(SAMPLES.get(snake(argv), ())), ("1",)), (name, argv)


def _steps() -> Any:
    first = yield queue_builders.promote_jobs(KEYS, count=2)
    second = yield queue_builders.promote_jobs(KEYS, count=2)
    return first + second


def test_drive_sends_each_reply_back_and_returns_the_value() -> None:
    seen: list[Call[Any]] = []

    def run(call: Call[Any]) -> int:
        seen.append(call)
        return len(seen)

    assert drive(run, _steps()) == 3
    assert [c.script for c in seen] == ["promoteJobs", "promoteJobs"]


async def test_adrive_is_the_async_twin() -> None:
    async def run(call: Call[Any]) -> int:
        return 5

    assert await adrive(run, _steps()) == 10


def _catching() -> Steps[str]:
    try:
        yield Command("xinfo_stream", ("events",))
    except LookupError as exc:
        return f"caught {exc}"
    return "no error"


def _failing(step: Step) -> Any:
    raise LookupError("no such key")


async def _afailing(step: Step) -> Any:
    raise LookupError("no such key")


def test_a_step_error_is_thrown_into_the_operation() -> None:
    assert drive(_failing, _catching()) == "caught no such key"
    with pytest.raises(LookupError, match="no such key"):
        drive(_failing, _steps())


async def test_adrive_throws_a_step_error_in_too() -> None:
    assert await adrive(_afailing, _catching()) == "caught no such key"
    with pytest.raises(LookupError, match="no such key"):
        await adrive(_afailing, _steps())


def _unpacked(builder: Any) -> list[str]:
    """The keywords of a builder's ``**kwargs: Unpack[SomeTypedDict]``, in the dict's order."""
    params = inspect.signature(builder).parameters.values()
    var = [p.name for p in params if p.kind is inspect.Parameter.VAR_KEYWORD]
    if not var:
        return []
    hint = typing.get_type_hints(builder, include_extras=True)[var[0]]
    assert typing.get_origin(hint) is typing.Unpack
    (fields,) = typing.get_args(hint)
    return list(fields.__annotations__)
