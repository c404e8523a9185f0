"""moveToWaitingChildren-6.lua: an active step job waits for the children it added.

Return codes pinned: 0 moved; 1 nothing pending; -1 missing job; -2 missing lock; -3 not
active; -6 lock of another token; -9 a fail-parent child failed.
"""

from __future__ import annotations

from typing import Any

from tests.lua.helpers import NOW, TOKEN, LuaQueue


def move(lq: LuaQueue, job_id: str, token: str = TOKEN, child: str = "") -> Any:
    keys = [
        lq.keys["active"],
        lq.keys["waiting-children"],
        lq.keys.job(job_id),
        lq.keys["stalled"],
        lq.keys["events"],
        lq.keys["meta"],
    ]
    return lq.run("moveToWaitingChildren", keys, [job_id, token, child, NOW])


def test_moves_active_job_with_pending_children(lq: LuaQueue) -> None:
    job_id = lq.add_active()
    lq.r.sadd(lq.keys.job(job_id) + ":dependencies", lq.keys.job("child"))
    lq.clear_events()
    assert move(lq, job_id) == 0
    assert lq.lst("active") == [] and lq.lock(job_id) is None
    assert lq.zset("waiting-children") == [(job_id, float(NOW))]
    assert lq.events() == [("event", "waiting-children", "jobId", job_id, "prev", "active")]


def test_nothing_pending_is_1_and_job_stays_active(lq: LuaQueue) -> None:
    job_id = lq.add_active()
    assert move(lq, job_id) == 1
    lq.r.sadd(lq.keys.job(job_id) + ":dependencies", lq.keys.job("a"))
    assert move(lq, job_id, child=lq.keys.job("b")) == 1
    assert lq.lst("active") == [job_id] and lq.lock(job_id) == TOKEN


def test_error_codes(lq: LuaQueue) -> None:
    assert move(lq, "nope") == -1
    job_id = lq.add_active()
    deps = lq.keys.job(job_id) + ":dependencies"
    lq.r.sadd(deps, lq.keys.job("a"))
    assert move(lq, job_id, token="other:1") == -6
    lq.r.delete(lq.keys.job(job_id) + ":lock")
    assert move(lq, job_id) == -2
    lq.r.lrem(lq.keys["active"], 0, job_id)
    assert move(lq, job_id, token="0") == -3
    lq.r.zadd(lq.keys.job(job_id) + ":unsuccessful", {lq.keys.job("a"): NOW})
    assert move(lq, job_id) == -9
