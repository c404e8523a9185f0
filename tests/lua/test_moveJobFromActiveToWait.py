"""moveJobFromActiveToWait-11.lua: hand an active job back to the front without an attempt.

Return codes pinned: 0 (no limiter); the limiter's PTTL (> 0); -1 missing job; -2 missing lock;
-3 not in active; -6 lock owned by another token.
"""

from __future__ import annotations

from tests.lua.helpers import TOKEN, LuaQueue, prioritized_score


def hand_back(lq: LuaQueue, job_id: str, token: str = TOKEN) -> object:
    return lq.run("moveJobFromActiveToWait", lq.fetch_keys(), [lq.prefix, job_id, token])


def test_job_goes_to_the_front_of_wait_without_an_attempt(lq: LuaQueue) -> None:
    lq.add_active()
    lq.add()
    lq.r.sadd(lq.keys["stalled"], "1")
    lq.r.delete(lq.keys["marker"])
    lq.clear_events()

    assert hand_back(lq, "1") == 0

    assert lq.lst("wait") == ["2", "1"]  # RPUSH: runs next
    assert lq.lst("active") == []
    assert "atm" not in lq.job("1")
    assert lq.lock("1") is None
    assert lq.members("stalled") == set()
    assert lq.zset("marker") == [("0", 0)]
    assert lq.events() == [("event", "waiting", "jobId", "1", "prev", "active")]


def test_prioritized_job_goes_to_the_front_of_its_priority(lq: LuaQueue) -> None:
    lq.add_active(priority=7)
    lq.add(priority=7)
    assert hand_back(lq, "1") == 0
    assert lq.zset("prioritized") == [("1", 7 * 2**32), ("2", prioritized_score(7, 2))]


def test_returns_limiter_pttl(lq: LuaQueue) -> None:
    lq.add_active()
    lq.r.set(lq.keys["limiter"], 9007199254740991, px=5000)
    ttl = hand_back(lq, "1")
    assert isinstance(ttl, int) and 4000 < ttl <= 5000


def test_paused_queue_gets_no_marker(lq: LuaQueue) -> None:
    lq.add_active()
    lq.r.hset(lq.keys["meta"], "paused", "1")
    lq.r.delete(lq.keys["marker"])
    assert hand_back(lq, "1") == 0
    assert lq.zset("marker") == []
    assert lq.lst("wait") == ["1"]


def test_missing_job_returns_minus_1(lq: LuaQueue) -> None:
    assert hand_back(lq, "ghost") == -1


def test_missing_lock_returns_minus_2(lq: LuaQueue) -> None:
    lq.add_active()
    lq.r.delete(lq.keys.job("1") + ":lock")
    assert hand_back(lq, "1") == -2
    assert lq.lst("active") == ["1"]


def test_not_in_active_returns_minus_3(lq: LuaQueue) -> None:
    lq.add()
    assert hand_back(lq, "1", token="0") == -3
    assert lq.lst("wait") == ["1"]


def test_lock_owned_by_another_token_returns_minus_6(lq: LuaQueue) -> None:
    lq.add_active()
    assert hand_back(lq, "1", token="intruder:1") == -6
    assert lq.lock("1") == TOKEN
    assert lq.lst("active") == ["1"]
