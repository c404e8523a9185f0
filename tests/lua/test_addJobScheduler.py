"""addJobScheduler-11.lua: store a scheduler and exactly one pending iteration.

Return codes pinned: {jobId, delay}; -10 cron iteration already started; -11 every: 32 slots busy.
"""

from __future__ import annotations

import json

from tests.lua.helpers import NOW, LuaQueue
from tests.lua.schedulers import upsert


def test_every_first_run_now_offset_is_now_mod_every(lq: LuaQueue) -> None:
    assert upsert(lq, every=1000, data='{"t":1}', opts='{"attempts":2}') == [f"repeat:s:{NOW}", 0]
    assert lq.r.hgetall(lq.keys["repeat:s"]) == {
        "name": "tick",
        "ic": "1",
        "data": '{"t":1}',
        "opts": '{"attempts":2}',
        "every": "1000",
        "offset": str(NOW % 1000),
    }
    assert lq.zset("repeat") == [("s", float(NOW))]
    job = lq.job(f"repeat:s:{NOW}")
    assert job["rjk"] == "s" and job["delay"] == "0" and job["timestamp"] == str(NOW)
    opts = json.loads(job["opts"])
    assert opts["repeat"] == {"every": 1000, "count": 1, "offset": NOW % 1000}
    assert opts["attempts"] == 2 and opts["prevMillis"] == NOW
    assert lq.lst("wait") == [f"repeat:s:{NOW}"]
    assert lq.r.get(lq.keys["id"]) == "1"
    assert lq.event_names() == ["added", "waiting"]


def test_start_date_in_future_is_delayed(lq: LuaQueue) -> None:
    assert upsert(lq, every=1000, start=NOW + 5000) == [f"repeat:s:{NOW + 5000}", 5000]
    assert lq.zset("delayed") == [(f"repeat:s:{NOW + 5000}", float((NOW + 5000) * 4096))]
    assert lq.event_names() == ["added", "delayed"]


def test_given_offset_aligns_slot(lq: LuaQueue) -> None:
    slot = NOW // 1000 * 1000 + 999
    assert upsert(lq, every=1000, offset=999) == [f"repeat:s:{slot}", slot - NOW]


def test_reupsert_replaces_pending_iteration(lq: LuaQueue) -> None:
    upsert(lq, every=1000, start=NOW + 5000)
    lq.clear_events()
    assert upsert(lq, every=1000, now=NOW + 10, start=NOW + 7000)[0] == f"repeat:s:{NOW + 7000}"
    assert [m for m, _ in lq.zset("delayed")] == [f"repeat:s:{NOW + 7000}"]
    assert lq.job_keys_exist(f"repeat:s:{NOW + 5000}") == 0
    assert lq.event_names() == ["removed", "added", "delayed"]


def test_reupsert_same_every_keeps_pending_slot_not_earlier(lq: LuaQueue) -> None:
    upsert(lq, every=1000)
    lq.r.lpop(lq.keys["wait"])  # the first iteration started ...
    lq.r.zadd(lq.keys["repeat"], {"s": NOW + 1000})  # ... and its worker scheduled the next
    upsert(lq, every=1000, now=NOW + 300)
    assert lq.zset("repeat") == [("s", float(NOW + 1000))]


def test_every_collision_takes_next_slot_then_minus_11(lq: LuaQueue) -> None:
    lq.r.hset(lq.keys.job(f"repeat:s:{NOW}"), "name", "started")
    assert upsert(lq, every=10)[0] == f"repeat:s:{NOW + 10}"
    lq.r.delete(lq.keys["repeat"], lq.keys["repeat:s"])
    for i in range(33):
        lq.r.hset(lq.keys.job(f"repeat:b:{NOW + i * 10}"), "name", "started")
    assert upsert(lq, "b", every=10) == -11
    assert lq.r.exists(lq.keys["repeat:b"]) == 0


def test_pattern_uses_client_millis_and_collision_is_minus_10(lq: LuaQueue) -> None:
    assert upsert(lq, pattern="0 * * * *", tz="Europe/Paris", next_millis=NOW + 60_000) == [
        f"repeat:s:{NOW + 60_000}",
        60_000,
    ]
    assert lq.r.hget(lq.keys["repeat:s"], "tz") == "Europe/Paris"
    lq.r.hset(lq.keys.job(f"repeat:c:{NOW + 1}"), "name", "started")
    assert upsert(lq, "c", pattern="* * * * * *", next_millis=NOW + 1) == -10
    assert lq.r.exists(lq.keys["repeat:c"]) == 0


def test_iteration_with_priority_goes_to_prioritized(lq: LuaQueue) -> None:
    upsert(lq, every=1000, opts='{"priority":3}')
    assert [m for m, _ in lq.zset("prioritized")] == [f"repeat:s:{NOW}"]


def test_exhausted_limit_is_not_restarted_by_an_upsert(lq: LuaQueue) -> None:
    upsert(lq, every=1000, limit=1)
    lq.r.rpoplpush(lq.keys["wait"], lq.keys["active"])  # the only iteration started
    assert upsert(lq, every=1000, limit=1, now=NOW + 50) == 0
    assert lq.zset("delayed") == [] and lq.lst("wait") == []
    assert upsert(lq, every=1000, limit=2, now=NOW + 60)[0] == f"repeat:s:{NOW + 1000}"
