"""extendLocks-1.lua: renew a worker's locks in one call.

Return codes pinned: [] (every lock renewed); the list of lost ids (lock missing or owned by
another token).
"""

from __future__ import annotations

from tests.lua.helpers import LuaQueue


def extend(lq: LuaQueue, lock_ms: int, *pairs: str) -> list[str]:
    return list(lq.run("extendLocks", [lq.keys["stalled"]], [lq.prefix, lock_ms, *pairs]))


def test_all_renewed_returns_empty_list_resets_ttl_and_leaves_stalled(lq: LuaQueue) -> None:
    lq.add_active("a", token="t-a")
    lq.add_active("b", token="t-b")
    lq.r.pexpire(lq.keys.job("a") + ":lock", 100)
    lq.r.sadd(lq.keys["stalled"], "a", "b", "other")

    assert extend(lq, 60_000, "a", "t-a", "b", "t-b") == []

    assert lq.lock("a") == "t-a" and lq.lock("b") == "t-b"
    assert 59_000 < lq.lock_pttl("a") <= 60_000
    assert 59_000 < lq.lock_pttl("b") <= 60_000
    assert lq.members("stalled") == {"other"}


def test_missing_or_foreign_locks_are_reported_lost(lq: LuaQueue) -> None:
    lq.add_active("mine", token="t-1")
    lq.add_active("theirs", token="other-worker:1")
    lq.add_active("gone", token="t-3")
    lq.r.delete(lq.keys.job("gone") + ":lock")
    lq.r.sadd(lq.keys["stalled"], "theirs", "gone")

    lost = extend(lq, 30_000, "mine", "t-1", "theirs", "t-2", "gone", "t-3")

    assert lost == ["theirs", "gone"]
    assert lq.lock("theirs") == "other-worker:1"  # never overwritten
    assert lq.lock("gone") is None  # never re-created
    assert lq.members("stalled") == {"theirs", "gone"}


def test_no_pairs_returns_empty_list(lq: LuaQueue) -> None:
    assert extend(lq, 30_000) == []
