"""moveToDelayed-11.lua: an active job waits in delayed (retry with backoff, or postponed).

Return codes pinned: 0; -1 missing job; -2 missing lock; -3 not in active; -6 lock owned by
another token.
"""

from __future__ import annotations

from tests.lua.helpers import NOW, TOKEN, LuaQueue, delayed_score

TRACE = '["ValueError: flaky"]'


def move(
    lq: LuaQueue,
    job_id: str,
    *,
    delay: int = 2000,
    now: int = NOW + 100,
    token: str = TOKEN,
    skip_attempt: bool = False,
    reason: str = "flaky",
    trace: str = TRACE,
) -> object:
    return lq.run(
        "moveToDelayed",
        lq.fetch_keys(),
        [lq.prefix, job_id, now, delay, token, "1" if skip_attempt else "0", reason, trace],
    )


def test_backoff_retry_goes_to_delayed_with_exact_score(lq: LuaQueue) -> None:
    lq.add_active()
    lq.r.sadd(lq.keys["stalled"], "1")
    lq.r.delete(lq.keys["marker"])
    lq.clear_events()
    due = NOW + 100 + 2000

    assert move(lq, "1") == 0

    job = lq.job("1")
    assert (job["atm"], job["delay"], job["failedReason"], job["stacktrace"]) == (
        "1",
        "2000",
        "flaky",
        TRACE,
    )
    assert lq.zset("delayed") == [("1", delayed_score(due))]
    assert lq.lst("active") == []
    assert lq.lock("1") is None
    assert lq.members("stalled") == set()
    assert lq.zset("marker") == [("1", due)]
    assert lq.events() == [("event", "delayed", "jobId", "1", "delay", str(due))]


def test_skip_attempt_leaves_atm_and_no_reason_leaves_fields(lq: LuaQueue) -> None:
    lq.add_active()
    assert move(lq, "1", skip_attempt=True, reason="", trace="") == 0
    job = lq.job("1")
    assert "atm" not in job and "failedReason" not in job and "stacktrace" not in job


def test_same_due_ms_gets_next_sequence_and_marker_tracks_earliest(lq: LuaQueue) -> None:
    lq.add(delay=1000)  # 1: due NOW + 1000
    lq.add_active()  # 2
    lq.add_active()  # 3
    assert move(lq, "2", now=NOW, delay=5000) == 0
    assert move(lq, "3", now=NOW, delay=5000) == 0
    assert lq.zset("delayed") == [
        ("1", delayed_score(NOW + 1000)),
        ("2", delayed_score(NOW + 5000)),
        ("3", delayed_score(NOW + 5000, 1)),
    ]
    assert lq.r.zscore(lq.keys["marker"], "1") == NOW + 1000


def test_missing_job_returns_minus_1(lq: LuaQueue) -> None:
    assert move(lq, "ghost") == -1
    assert lq.zset("delayed") == []


def test_missing_lock_returns_minus_2(lq: LuaQueue) -> None:
    lq.add_active()
    lq.r.delete(lq.keys.job("1") + ":lock")
    assert move(lq, "1") == -2
    assert lq.lst("active") == ["1"]
    assert lq.zset("delayed") == []


def test_not_in_active_returns_minus_3(lq: LuaQueue) -> None:
    lq.add()
    assert move(lq, "1", token="0") == -3
    assert lq.lst("wait") == ["1"]
    assert lq.zset("delayed") == []
    assert "atm" not in lq.job("1")


def test_lock_owned_by_another_token_returns_minus_6(lq: LuaQueue) -> None:
    lq.add_active()
    assert move(lq, "1", token="intruder:1") == -6
    assert lq.lock("1") == TOKEN
    assert lq.zset("delayed") == []
