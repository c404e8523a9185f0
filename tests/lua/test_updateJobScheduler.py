"""updateJobScheduler-11.lua: the next iteration, added once when the current one is activated.

Return codes pinned: jobId next added; 0 no scheduler / legacy / stale producer; 1 schedule over
(limit, endDate, no next cron time); 2 next iteration exists already (duplicated event).
"""

from __future__ import annotations

import json

from tests.lua.helpers import NOW, LuaQueue
from tests.lua.schedulers import update, upsert

FIRST = f"repeat:s:{NOW}"


def test_next_every_iteration_once(lq: LuaQueue) -> None:
    upsert(lq, every=1000)
    lq.clear_events()
    assert update(lq, FIRST, now=NOW + 5) == f"repeat:s:{NOW + 1000}"
    assert lq.zset("repeat") == [("s", float(NOW + 1000))]
    assert lq.r.hget(lq.keys["repeat:s"], "ic") == "2"
    assert json.loads(lq.job(f"repeat:s:{NOW + 1000}")["opts"])["repeat"]["count"] == 2
    assert lq.event_names() == ["added", "delayed"]
    # a second worker / a re-fetch of the same iteration: producer is no longer current
    assert update(lq, FIRST, now=NOW + 6) == 0
    assert lq.r.zcard(lq.keys["delayed"]) == 1


def test_late_activation_skips_to_next_future_slot(lq: LuaQueue) -> None:
    upsert(lq, every=1000)
    assert update(lq, FIRST, now=NOW + 3500) == f"repeat:s:{NOW + 4000}"


def test_pattern_takes_client_millis_or_ends(lq: LuaQueue) -> None:
    upsert(lq, pattern="* * * * * *", next_millis=NOW + 1)
    assert update(lq, f"repeat:s:{NOW + 1}", next_millis=NOW + 1001) == f"repeat:s:{NOW + 1001}"
    assert update(lq, f"repeat:s:{NOW + 1001}", next_millis="") == 1


def test_missing_scheduler_and_legacy_entry_answer_0(lq: LuaQueue) -> None:
    assert update(lq, FIRST) == 0
    lq.r.zadd(lq.keys["repeat"], {"s": NOW})
    lq.r.hset(lq.keys["repeat:s"], mapping={"name": "old", "every": "1000"})  # v5: no ic
    assert update(lq, FIRST) == 0


def test_limit_and_end_date_answer_1(lq: LuaQueue) -> None:
    upsert(lq, every=1000, limit=1)
    assert update(lq, FIRST) == 1
    upsert(lq, "e", every=1000, end=NOW + 500)
    assert update(lq, f"repeat:e:{NOW}", "e") == 1
    assert lq.zset("repeat") == [("e", float(NOW)), ("s", float(NOW))]


def test_existing_next_iteration_answers_2_with_duplicated(lq: LuaQueue) -> None:
    upsert(lq, every=1000)
    lq.r.hset(lq.keys.job(f"repeat:s:{NOW + 1000}"), "name", "there")
    lq.clear_events()
    assert update(lq, FIRST) == 2
    assert lq.events() == [("event", "duplicated", "jobId", f"repeat:s:{NOW + 1000}")]
