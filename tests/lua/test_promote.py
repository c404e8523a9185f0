"""promote-9.lua: move one delayed job to wait / prioritized now.

Return codes pinned: 0 promoted; -3 the job is not in delayed.
"""

from __future__ import annotations

from tests.lua.helpers import LuaQueue, prioritized_score

PROMOTE_KEYS = (
    "delayed",
    "wait",
    "paused",
    "meta",
    "prioritized",
    "active",
    "pc",
    "events",
    "marker",
)


def promote(lq: LuaQueue, job_id: str) -> int:
    return int(lq.run("promote", [lq.keys[s] for s in PROMOTE_KEYS], [lq.prefix, job_id]))


def test_promote_to_wait(lq: LuaQueue) -> None:
    lq.add(delay=60_000)
    lq.add()
    lq.r.delete(lq.keys["marker"])
    lq.clear_events()

    assert promote(lq, "1") == 0

    assert lq.zset("delayed") == []
    assert lq.lst("wait") == ["1", "2"]  # LPUSH: behind the job already waiting
    assert lq.job("1")["delay"] == "0"
    assert lq.zset("marker") == [("0", 0)]
    assert lq.events() == [("event", "waiting", "jobId", "1", "prev", "delayed")]


def test_promote_prioritized_job(lq: LuaQueue) -> None:
    lq.add(delay=60_000, priority=9)
    assert promote(lq, "1") == 0
    assert lq.zset("prioritized") == [("1", prioritized_score(9, 1))]
    assert lq.lst("wait") == []


def test_promote_on_paused_queue_adds_no_marker(lq: LuaQueue) -> None:
    lq.add(delay=60_000)
    lq.r.hset(lq.keys["meta"], "paused", "1")
    lq.r.delete(lq.keys["marker"])
    assert promote(lq, "1") == 0
    assert lq.lst("wait") == ["1"]
    assert lq.zset("marker") == []


def test_job_not_in_delayed_returns_minus_3(lq: LuaQueue) -> None:
    lq.add()
    lq.clear_events()
    assert promote(lq, "1") == -3
    assert promote(lq, "ghost") == -3
    assert lq.lst("wait") == ["1"]
    assert lq.events() == []


def test_a_job_key_that_is_not_a_hash_is_promoted_for_the_fetch_to_fail(lq: LuaQueue) -> None:
    """Trial finding: promoting such a job took it out of delayed, then errored: it was lost.
    Now it reaches wait, where the fetch fails it with its reason."""
    lq.r.set(lq.keys.job("s"), "written by hand")
    lq.r.zadd(lq.keys["delayed"], {"s": 4096})

    assert promote(lq, "s") == 0

    assert lq.lst("wait") == ["s"] and lq.zset("delayed") == []
    assert lq.activate() == [0, 0, 0, 0] and [m for m, _ in lq.zset("failed")] == ["s"]
