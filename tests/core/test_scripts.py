"""The script loader (django_bullq/core/scripts.py) and the shape of every lua/*.lua file."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
import redis.asyncio

from django_bullq.core import scripts as scripts_mod
from django_bullq.core.errors import BullqError, JobNotFound
from django_bullq.core.keys import QueueKeys
from django_bullq.core.scripts import (
    Scripts,
    ScriptSourceError,
    expand,
    load_sources,
    lua_dir,
)
from tests.support.lua_headers import SCRIPT_FILES, documented_keys, header, strip_comments

_KEY_USE = re.compile(r"KEYS\[(\d+)\]")


@pytest.fixture
def tmp_lua(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An empty scripts directory that load_sources() reads instead of lua/."""
    (tmp_path / "includes").mkdir()
    monkeypatch.setattr(scripts_mod, "lua_dir", lambda: tmp_path)
    load_sources.cache_clear()
    yield tmp_path
    load_sources.cache_clear()


# --- include expansion -----------------------------------------------------------------------


def test_each_include_is_expanded_once_dependencies_first(tmp_path: Path) -> None:
    (tmp_path / "base.lua").write_text("local function base() end")
    (tmp_path / "mid.lua").write_text("-- @include base\nlocal function mid() base() end")
    source = "-- @include mid\n-- @include base\n--  @include   mid  \nreturn mid()"

    out = expand(source, tmp_path)

    assert out.count("local function base()") == 1
    assert out.count("local function mid()") == 1
    assert out.index("function base") < out.index("function mid")
    assert "@include" not in out


def test_missing_include_names_the_file(tmp_path: Path) -> None:
    with pytest.raises(ScriptSourceError, match="missing include 'nothere'"):
        expand("-- @include nothere\nreturn 1", tmp_path)


def test_include_cycle_is_reported_with_its_path(tmp_path: Path) -> None:
    (tmp_path / "a.lua").write_text("-- @include b\n")
    (tmp_path / "b.lua").write_text("-- @include a\n")
    with pytest.raises(ScriptSourceError, match="include cycle: a -> b -> a"):
        expand("-- @include a\n", tmp_path)


def test_self_include_is_a_cycle(tmp_path: Path) -> None:
    (tmp_path / "a.lua").write_text("-- @include a\n")
    with pytest.raises(ScriptSourceError, match="include cycle: a -> a"):
        expand("-- @include a\n", tmp_path)


def test_include_lines_must_stand_alone(tmp_path: Path) -> None:
    (tmp_path / "a.lua").write_text("A")
    assert expand("x = 1 -- @include a", tmp_path) == "x = 1 -- @include a"


# --- file names and load_sources --------------------------------------------------------------


def test_load_sources_reads_name_and_key_count(tmp_lua: Path) -> None:
    (tmp_lua / "includes" / "helper.lua").write_text("local h = 1")
    (tmp_lua / "doThing-3.lua").write_text("-- @include helper\nreturn h")
    assert load_sources() == {
        "doThing": scripts_mod.ScriptSource("doThing", 3, "local h = 1\nreturn h")
    }


@pytest.mark.parametrize(
    "bad_name",
    ["move_to_active-11.lua", "moveToActive.lua", "moveToActive-x.lua", "2moveToActive-1.lua"],
)
def test_file_not_named_verbNoun_N_is_refused(tmp_lua: Path, bad_name: str) -> None:
    (tmp_lua / bad_name).write_text("return 1")
    with pytest.raises(ScriptSourceError, match="verbNoun-N.lua"):
        load_sources()


def test_shipped_scripts_are_all_loaded() -> None:
    names = {p.name.split("-")[0] for p in SCRIPT_FILES}
    assert set(load_sources()) == names
    assert names >= {
        "addJob",
        "moveToActive",
        "moveToFinished",
        "retryJob",
        "moveToDelayed",
        "moveJobFromActiveToWait",
        "extendLocks",
        "moveStalledJobsToWait",
        "pause",
        "promote",
        "removeJob",
        "updateProgress",
        "addLog",
        "cleanFinished",
    }


def test_every_include_file_is_used() -> None:
    used = set()
    for path in [*SCRIPT_FILES, *lua_dir().glob("includes/*.lua")]:
        used |= set(re.findall(r"^--\s*@include\s+(\w+)", path.read_text(), re.MULTILINE))
    assert {p.stem for p in lua_dir().glob("includes/*.lua")} == used


# --- headers and KEYS counts -------------------------------------------------------------------


@pytest.mark.parametrize("path", SCRIPT_FILES, ids=lambda p: p.name)
def test_header_documents_keys_argv_returns_events(path: Path) -> None:
    text = header(path)
    for section in ("KEYS[1", "ARGV[1]", "Return", "Events"):
        assert section in text, f"{path.name}: header lacks {section}"


@pytest.mark.parametrize("path", SCRIPT_FILES, ids=lambda p: p.name)
def test_keys_count_in_name_matches_header_and_code(path: Path) -> None:
    num_keys = int(path.stem.rsplit("-", 1)[1])
    source = load_sources()[path.stem.rsplit("-", 1)[0]]

    assert source.num_keys == num_keys
    assert documented_keys(header(path)) == set(range(1, num_keys + 1))
    assert max(int(i) for i in _KEY_USE.findall(strip_comments(source.source))) == num_keys


# --- Redis --------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", SCRIPT_FILES, ids=lambda p: p.name)
def test_every_script_compiles_with_script_load(r: redis.Redis, path: Path) -> None:
    source = load_sources()[path.stem.rsplit("-", 1)[0]]
    sha = r.script_load(source.source)
    assert r.script_exists(sha) == [True]


def test_wrong_keys_count_is_refused_before_redis(r: redis.Redis) -> None:
    with pytest.raises(BullqError, match="takes 3 KEYS, got 2"):
        Scripts(r).run("updateProgress", ["a", "b"], ["1", "2"])


def test_negative_codes_raise_typed_errors_unless_asked_raw(
    r: redis.Redis, queue_name: str
) -> None:
    keys = QueueKeys(queue_name)
    scripts = Scripts(r)
    args = ([keys.job("x"), keys["events"], keys["meta"]], ["x", "1"])
    assert scripts.run("updateProgress", *args, raise_codes=False) == -1
    with pytest.raises(JobNotFound) as err:
        scripts.run("updateProgress", *args, job_id="x")
    assert (err.value.code, err.value.job_id, err.value.script) == (-1, "x", "updateProgress")


def test_scripts_reload_after_script_flush(r: redis.Redis, queue_name: str) -> None:
    keys = QueueKeys(queue_name)
    scripts = Scripts(r)
    args = ([keys.job("x"), keys["events"], keys["meta"]], ["x", "1"])
    assert scripts.run("updateProgress", *args, raise_codes=False) == -1
    r.script_flush()
    assert scripts.run("updateProgress", *args, raise_codes=False) == -1  # NOSCRIPT -> load


async def test_async_run(redis_url: str, queue_name: str) -> None:
    client = redis.asyncio.Redis.from_url(redis_url, decode_responses=True)
    keys = QueueKeys(queue_name)
    try:
        result = await Scripts(client).arun(
            "updateProgress",
            [keys.job("x"), keys["events"], keys["meta"]],
            ["x", "1"],
            raise_codes=False,
        )
    finally:
        await client.aclose()
    assert result == -1


@pytest.mark.parametrize("line", ["-- @include get-max", "-- @include a b", "--@include"])
def test_malformed_include_line_is_refused(tmp_lua: Path, line: str) -> None:
    (tmp_lua / "doThing-1.lua").write_text(f"{line}\nreturn 1")
    with pytest.raises(ScriptSourceError, match="malformed include line"):
        load_sources()


@pytest.mark.parametrize("path", SCRIPT_FILES, ids=lambda p: p.name)
def test_every_argv_used_is_documented(path: Path) -> None:
    documented: set[int] = set()
    for first, last in re.findall(r"ARGV\[(\d+)(?:\.\.(\d+)?)?\]", header(path)):
        documented.update(range(int(first), int(last or first) + 1))
    code = strip_comments(load_sources()[path.stem.rsplit("-", 1)[0]].source)
    used = {int(i) for i in re.findall(r"ARGV\[(\d+)\]", code)}
    assert used <= documented


@pytest.mark.parametrize("path", SCRIPT_FILES, ids=lambda p: p.name)
def test_every_event_emitted_is_named_in_the_header(path: Path) -> None:
    events_section = header(path).split("Events", 1)[1]
    code = strip_comments(load_sources()[path.stem.rsplit("-", 1)[0]].source)
    for name in set(re.findall(r'"event",\s*"([\w-]+)"', code)):
        assert re.search(rf"\b{re.escape(name)}\b", events_section), f"{path.name}: {name}"
