"""cleanJobsInSet-3.lua: remove old jobs of one state, up to a limit; returns removed ids."""

from __future__ import annotations

from tests.lua.factories import seed_finished
from tests.lua.helpers import NOW, LuaQueue


def clean(lq: LuaQueue, state: str, cutoff: int, limit: int) -> list[str]:
    key = lq.keys[state]
    return [
        str(x)
        for x in lq.run(
            "cleanJobsInSet",
            [key, lq.keys["events"], lq.keys["meta"]],
            [lq.prefix, cutoff, limit, state],
        )
    ]


def test_finished_by_score_with_limit(lq: LuaQueue) -> None:
    ids = seed_finished(lq, "completed", [NOW - 300, NOW - 200, NOW - 100, NOW + 100])
    assert clean(lq, "completed", NOW, 2) == ids[:2]
    assert clean(lq, "completed", NOW, 0) == [ids[2]]
    assert clean(lq, "completed", NOW, 0) == []
    assert [m for m, _ in lq.zset("completed")] == [ids[3]]
    assert lq.job_keys_exist(ids[0]) == 0
    assert [e[1:] for e in lq.events()] == [
        ("cleaned", "count", "2"),
        ("cleaned", "count", "1"),
        ("cleaned", "count", "0"),
    ]


def test_wait_uses_timestamp_oldest_first(lq: LuaQueue) -> None:
    lq.add(timestamp=NOW - 500)
    lq.add(timestamp=NOW + 500)
    lq.add(timestamp=NOW - 400)
    assert clean(lq, "wait", NOW, 10) == ["1", "3"]
    assert lq.lst("wait") == ["2"]


def test_active_skips_locked_jobs(lq: LuaQueue) -> None:
    lq.add_active(timestamp=NOW - 10)
    lq.r.lpush(lq.keys["active"], "orphan")  # stalled leftover without lock
    lq.r.hset(lq.keys.job("orphan"), mapping={"name": "o", "data": "{}", "processedOn": NOW - 5})
    assert clean(lq, "active", NOW, 10) == ["orphan"]
    assert lq.lst("active") == ["1"]


def test_delayed_and_prioritized(lq: LuaQueue) -> None:
    lq.add(delay=60_000, timestamp=NOW - 10)
    lq.add(priority=3, timestamp=NOW - 10)
    lq.add(priority=3, timestamp=NOW + 10)
    assert clean(lq, "delayed", NOW, 10) == ["1"]
    assert clean(lq, "prioritized", NOW, 10) == ["2"]
    assert [m for m, _ in lq.zset("prioritized")] == ["3"]


def test_skips_current_scheduler_iteration(lq: LuaQueue) -> None:
    it = "repeat:s1:1000"
    lq.r.zadd(lq.keys["repeat"], {"s1": 1000})
    lq.r.hset(
        lq.keys.job(it), mapping={"name": "t", "data": "{}", "rjk": "s1", "timestamp": NOW - 10}
    )
    lq.r.lpush(lq.keys["wait"], it)
    assert clean(lq, "wait", NOW, 10) == []
    assert lq.lst("wait") == [it]


def test_a_job_key_that_is_not_a_hash_is_cleaned_with_the_rest(lq: LuaQueue) -> None:
    ids = seed_finished(lq, "failed", [NOW - 300])
    lq.r.set(lq.keys.job("s"), "written by hand")
    lq.r.zadd(lq.keys["failed"], {"s": NOW - 200})
    lq.r.rpush(lq.keys["wait"], "w")
    lq.r.rpush(lq.keys.job("w"), "a list")

    assert sorted(clean(lq, "failed", NOW, 10)) == sorted([ids[0], "s"])
    assert clean(lq, "wait", NOW, 10) == ["w"]

    assert lq.zset("failed") == [] and lq.lst("wait") == []
    assert lq.r.exists(lq.keys.job("s"), lq.keys.job("w")) == 0
