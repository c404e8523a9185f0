"""retryJob-11.lua: immediate retry of an active job (backoff delay 0).

Return codes pinned: 0; -1 missing job; -2 missing lock; -3 not in active; -6 lock owned by
another token.
"""

from __future__ import annotations

from tests.lua.helpers import NOW, TOKEN, LuaQueue, opts_json, prioritized_score

TRACE = '["Traceback (most recent call last):","ValueError: boom"]'


def retry(
    lq: LuaQueue,
    job_id: str,
    *,
    token: str = TOKEN,
    now: int = NOW + 500,
    reason: str = "boom",
    trace: str = TRACE,
) -> object:
    return lq.run("retryJob", lq.fetch_keys(), [lq.prefix, job_id, now, token, reason, trace])


def test_retry_pushes_back_to_wait_and_counts_the_attempt(lq: LuaQueue) -> None:
    lq.add_active()
    lq.add()
    lq.r.sadd(lq.keys["stalled"], "1")
    lq.r.delete(lq.keys["marker"])
    lq.clear_events()

    assert retry(lq, "1") == 0

    job = lq.job("1")
    assert (job["atm"], job["failedReason"], job["stacktrace"]) == ("1", "boom", TRACE)
    assert "finishedOn" not in job
    assert lq.lst("wait") == ["1", "2"]  # LPUSH: behind the waiting job 2
    assert lq.lst("active") == []
    assert lq.lock("1") is None
    assert lq.members("stalled") == set()
    assert lq.zset("marker") == [("0", 0)]
    assert lq.events() == [("event", "waiting", "jobId", "1", "prev", "active")]


def test_lifo_job_goes_to_the_front(lq: LuaQueue) -> None:
    lq.add_active(opts=opts_json(lifo=True), lifo=True)
    lq.add()
    assert retry(lq, "1") == 0
    assert lq.lst("wait") == ["2", "1"]  # RPUSH: runs next


def test_prioritized_job_gets_a_fresh_counter_score(lq: LuaQueue) -> None:
    lq.add_active(priority=3)
    assert lq.r.get(lq.keys["pc"]) == "1"
    assert retry(lq, "1") == 0
    assert lq.zset("prioritized") == [("1", prioritized_score(3, 2))]
    assert lq.lst("wait") == []


def test_paused_queue_gets_no_marker(lq: LuaQueue) -> None:
    lq.add_active()
    lq.r.hset(lq.keys["meta"], "paused", "1")
    lq.r.delete(lq.keys["marker"])
    assert retry(lq, "1") == 0
    assert lq.lst("wait") == ["1"]
    assert lq.zset("marker") == []


def test_due_delayed_jobs_are_promoted_first(lq: LuaQueue) -> None:
    lq.add_active()
    lq.add(delay=100)
    lq.clear_events()
    assert retry(lq, "1", now=NOW + 100) == 0
    assert lq.lst("wait") == ["1", "2"]
    assert lq.events() == [
        ("event", "waiting", "jobId", "2", "prev", "delayed"),
        ("event", "waiting", "jobId", "1", "prev", "active"),
    ]


def test_missing_job_returns_minus_1(lq: LuaQueue) -> None:
    assert retry(lq, "ghost") == -1
    assert lq.lst("wait") == []


def test_missing_lock_returns_minus_2(lq: LuaQueue) -> None:
    lq.add_active()
    lq.r.delete(lq.keys.job("1") + ":lock")
    assert retry(lq, "1") == -2
    assert lq.lst("active") == ["1"]
    assert "atm" not in lq.job("1")


def test_not_in_active_returns_minus_3(lq: LuaQueue) -> None:
    lq.add()
    assert retry(lq, "1", token="0") == -3
    assert lq.lst("wait") == ["1"]
    assert "atm" not in lq.job("1")


def test_lock_owned_by_another_token_returns_minus_6(lq: LuaQueue) -> None:
    lq.add_active()
    assert retry(lq, "1", token="intruder:1") == -6
    assert lq.lock("1") == TOKEN
    assert lq.lst("active") == ["1"]
