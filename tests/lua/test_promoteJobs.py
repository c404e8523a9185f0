"""promoteJobs-6.lua: delayed → head of wait, `count` per call. Returns the number moved."""

from __future__ import annotations

from tests.lua.helpers import LuaQueue


def promote_jobs(lq: LuaQueue, count: int) -> int:
    keys = [lq.keys[s] for s in ("wait", "active", "meta", "events", "marker", "delayed")]
    return int(lq.run("promoteJobs", keys, [lq.prefix, count]))


def test_promotes_in_batches_ignoring_priority(lq: LuaQueue) -> None:
    lq.add(delay=60_000)
    lq.add(delay=70_000, priority=3)
    lq.add(delay=80_000)
    lq.clear_events()
    lq.r.delete(lq.keys["marker"])

    assert promote_jobs(lq, 2) == 2
    assert promote_jobs(lq, 2) == 1
    assert promote_jobs(lq, 2) == 0

    assert lq.zset("delayed") == []
    assert lq.lst("wait") == ["3", "2", "1"]  # LPUSH in due order: 1 runs first
    assert lq.zset("prioritized") == []
    assert lq.job("2")["delay"] == "0"
    assert lq.zset("marker") == [("0", 0)]
    assert lq.events() == [("event", "waiting", "jobId", i, "prev", "delayed") for i in "123"]


def test_paused_queue_gets_no_marker(lq: LuaQueue) -> None:
    lq.add(delay=60_000)
    lq.r.hset(lq.keys["meta"], "paused", "1")
    lq.r.delete(lq.keys["marker"])
    assert promote_jobs(lq, 10) == 1
    assert lq.zset("marker") == []
