"""pause-7.lua: v6 pause / resume (jobs stay in wait; legacy paused list migrated on resume).

Return codes pinned: 0 for pause; on resume the number of ids left in the legacy paused list
(0 when done, > 0 when another call is needed).
"""

from __future__ import annotations

from tests.lua.helpers import NOW, LuaQueue

PAUSE_KEYS = ("wait", "paused", "meta", "prioritized", "events", "delayed", "marker")


def pause(lq: LuaQueue, action: str) -> int:
    return int(lq.run("pause", [lq.keys[s] for s in PAUSE_KEYS], [action]))


def test_pause_sets_meta_deletes_marker_and_keeps_wait(lq: LuaQueue) -> None:
    lq.add()
    lq.clear_events()
    assert pause(lq, "paused") == 0
    assert lq.r.hget(lq.keys["meta"], "paused") == "1"
    assert lq.exists("marker") == 0
    assert lq.lst("wait") == ["1"]
    assert lq.exists("paused") == 0
    assert lq.events() == [("event", "paused")]


def test_resume_with_waiting_jobs_adds_base_marker(lq: LuaQueue) -> None:
    lq.add()
    pause(lq, "paused")
    lq.clear_events()
    assert pause(lq, "resumed") == 0
    assert lq.r.hexists(lq.keys["meta"], "paused") is False
    assert lq.zset("marker") == [("0", 0)]
    assert lq.events() == [("event", "resumed")]


def test_resume_with_prioritized_jobs_adds_base_marker(lq: LuaQueue) -> None:
    lq.add(priority=1)
    pause(lq, "paused")
    pause(lq, "resumed")
    assert lq.zset("marker") == [("0", 0)]


def test_resume_with_only_delayed_jobs_adds_delay_marker(lq: LuaQueue) -> None:
    lq.add(delay=4000)
    pause(lq, "paused")
    assert pause(lq, "resumed") == 0
    assert lq.zset("marker") == [("1", NOW + 4000)]


def test_resume_of_empty_queue_adds_no_marker(lq: LuaQueue) -> None:
    pause(lq, "paused")
    assert pause(lq, "resumed") == 0
    assert lq.zset("marker") == []


def test_resume_renames_legacy_paused_list_when_wait_is_missing(lq: LuaQueue) -> None:
    lq.r.rpush(lq.keys["paused"], "x", "y")
    lq.r.hset(lq.keys["meta"], "paused", "1")
    assert pause(lq, "resumed") == 0
    assert lq.lst("wait") == ["x", "y"]
    assert lq.exists("paused") == 0
    assert lq.zset("marker") == [("0", 0)]


def test_resume_moves_legacy_paused_ids_to_the_front_of_wait(lq: LuaQueue) -> None:
    lq.add()
    lq.r.rpush(lq.keys["paused"], "x", "y")
    assert pause(lq, "resumed") == 0
    assert lq.lst("wait") == ["1", "x", "y"]
    assert lq.exists("paused") == 0


def test_resume_moves_7000_per_call_and_reports_the_rest(lq: LuaQueue) -> None:
    lq.add()
    ids = [f"p{i}" for i in range(7005)]
    lq.r.rpush(lq.keys["paused"], *ids)

    assert pause(lq, "resumed") == 5
    assert lq.r.llen(lq.keys["wait"]) == 7001
    assert lq.lst("paused") == ids[7000:]

    assert pause(lq, "resumed") == 0
    assert lq.lst("wait") == ["1", *ids]
    assert lq.exists("paused") == 0
