"""moveToActive-11.lua (fetch): every tuple it can return and the state it leaves.

Return codes pinned: {fields, jobId, 0, 0}; {0, 0, ttl, 0} rate limited; {0, 0, 0, dueMs} next
delayed job; {0, 0, 0, 0} empty, paused, or at global concurrency.
"""

from __future__ import annotations

import factory

from tests.lua.factories import NewJobFactory
from tests.lua.helpers import (
    LOCK_MS,
    NOW,
    TOKEN,
    LuaQueue,
    delayed_score,
    fields_of,
    prioritized_score,
)


def test_activates_locks_and_marks_started(lq: LuaQueue) -> None:
    lq.add(name="app.tasks.ping", data='{"a":1}')
    lq.r.delete(lq.keys["marker"])
    lq.clear_events()

    reply = lq.activate(now=NOW + 7)

    assert reply[1:] == ["1", 0, 0]
    assert fields_of(reply[0]) == {
        "name": "app.tasks.ping",
        "data": '{"a":1}',
        "opts": '{"attempts":0}',
        "timestamp": str(NOW),
        "delay": "0",
        "priority": "0",
        "processedOn": str(NOW + 7),
        "ats": "1",
    }
    assert lq.job("1") == fields_of(reply[0])
    assert lq.lst("wait") == []
    assert lq.lst("active") == ["1"]
    assert lq.lock("1") == TOKEN
    assert LOCK_MS - 1000 < lq.lock_pttl("1") <= LOCK_MS
    assert lq.events() == [("event", "active", "jobId", "1", "prev", "waiting")]
    assert lq.zset("marker") == [("0", 0)]  # re-added unconditionally to chain-wake workers


def test_worker_name_sets_pb_and_token_0_takes_no_lock(lq: LuaQueue) -> None:
    lq.add()
    reply = lq.activate(token="0", worker_name="wname")
    assert fields_of(reply[0])["pb"] == "wname"
    assert lq.lock("1") is None


def test_second_start_increments_ats(lq: LuaQueue) -> None:
    lq.add()
    lq.r.hset(lq.keys.job("1"), "ats", "2")
    assert fields_of(lq.activate()[0])["ats"] == "3"


def test_wait_runs_before_prioritized_then_lowest_score(lq: LuaQueue) -> None:
    lq.add(priority=2)  # 1
    lq.add(priority=1)  # 2
    lq.add()  # 3
    lq.add()  # 4

    order = [lq.activate(token=f"t{i}")[1] for i in range(4)]

    assert order == ["3", "4", "2", "1"]
    assert lq.lst("active") == ["1", "2", "4", "3"]  # activated jobs enter at the left
    assert lq.r.get(lq.keys["pc"]) == "2"
    assert lq.activate() == [0, 0, 0, 0]
    assert lq.exists("pc") == 0  # deleted when a fetch finds prioritized empty


def test_empty_queue_returns_all_zeros(lq: LuaQueue) -> None:
    assert lq.activate() == [0, 0, 0, 0]
    assert lq.lst("active") == []
    assert lq.events() == []


def test_next_delayed_due_time_when_nothing_ready(lq: LuaQueue) -> None:
    lq.add(delay=5000)
    lq.add(delay=3000)
    assert lq.activate(now=NOW + 1) == [0, 0, 0, NOW + 3000]


def test_due_delayed_jobs_are_promoted_and_fetched(lq: LuaQueue) -> None:
    lq.add(delay=100)  # 1 -> wait
    lq.add(delay=100, priority=4)  # 2 -> prioritized
    lq.add(delay=9000)  # 3 stays
    lq.clear_events()
    lq.r.delete(lq.keys["marker"])

    reply = lq.activate(now=NOW + 100)

    assert reply[1] == "1"
    assert fields_of(reply[0])["delay"] == "0"
    assert lq.job("2")["delay"] == "0"
    assert lq.zset("prioritized") == [("2", prioritized_score(4, 1))]
    assert lq.zset("delayed") == [("3", delayed_score(NOW + 9000))]
    assert lq.events() == [
        ("event", "waiting", "jobId", "1", "prev", "delayed"),
        ("event", "waiting", "jobId", "2", "prev", "delayed"),
        ("event", "active", "jobId", "1", "prev", "waiting"),
    ]
    assert lq.zset("marker") == [("0", 0)]


def test_paused_returns_all_zeros_but_still_promotes(lq: LuaQueue) -> None:
    lq.add()
    lq.add(delay=10)
    lq.r.hset(lq.keys["meta"], "paused", "1")
    lq.r.delete(lq.keys["marker"])

    assert lq.activate(now=NOW + 10) == [0, 0, 0, 0]

    assert lq.lst("wait") == ["2", "1"]
    assert lq.zset("delayed") == []
    assert lq.zset("marker") == []  # no marker while paused
    assert lq.lst("active") == []


def test_global_concurrency_reached_returns_all_zeros(lq: LuaQueue) -> None:
    lq.add()
    lq.add()
    lq.r.hset(lq.keys["meta"], "concurrency", "1")
    assert lq.activate(token="a")[1] == "1"
    assert lq.activate(token="b") == [0, 0, 0, 0]
    assert lq.lst("wait") == ["2"]


def test_worker_limiter_counts_and_then_returns_ttl(lq: LuaQueue) -> None:
    for _ in range(3):
        lq.add()

    assert lq.activate(token="a", limiter_max=2, limiter_duration=1000)[1] == "1"
    assert 0 < lq.r.pttl(lq.keys["limiter"]) <= 1000
    assert lq.activate(token="b", limiter_max=2, limiter_duration=1000)[1] == "2"
    assert lq.r.get(lq.keys["limiter"]) == "2"

    reply = lq.activate(token="c", limiter_max=2, limiter_duration=1000)

    assert reply[:2] == [0, 0] and reply[3] == 0
    assert 0 < reply[2] <= 1000
    assert lq.lst("wait") == ["3"]


def test_global_rate_limit_from_meta(lq: LuaQueue) -> None:
    lq.add()
    lq.add()
    lq.r.hset(lq.keys["meta"], mapping={"max": "1", "duration": "2000"})
    assert lq.activate(token="a")[1] == "1"
    assert 1000 < lq.r.pttl(lq.keys["limiter"]) <= 2000
    reply = lq.activate(token="b")
    assert reply[0:2] == [0, 0] and 1000 < reply[2] <= 2000 and reply[3] == 0


def test_manual_rate_limit_ttl(lq: LuaQueue) -> None:
    lq.add()
    lq.r.set(lq.keys["limiter"], 9007199254740991, px=5000)
    reply = lq.activate(limiter_max=10, limiter_duration=1000)
    assert reply[0:2] == [0, 0] and 4000 < reply[2] <= 5000


def test_job_with_defa_does_not_count_against_the_limiter(lq: LuaQueue) -> None:
    lq.add()
    lq.r.hset(lq.keys.job("1"), "defa", "job stalled more than allowable limit")
    reply = lq.activate(limiter_max=5, limiter_duration=1000)
    assert fields_of(reply[0])["defa"] == "job stalled more than allowable limit"
    assert lq.exists("limiter") == 0


def test_legacy_zero_colon_marker_in_wait_is_discarded(lq: LuaQueue) -> None:
    lq.add()
    lq.r.rpush(lq.keys["wait"], "0:123")  # right end: would be popped first
    assert lq.activate()[1] == "1"
    assert lq.lst("active") == ["1"]
    assert lq.lst("wait") == []


def test_bulk_fetch_order_for_mixed_priorities(lq: LuaQueue) -> None:
    priorities = factory.Iterator([0, 3, 1, 0, 2])  # type: ignore[attr-defined,no-untyped-call]
    jobs = NewJobFactory.build_batch(40, priority=priorities)
    ids = [job.add_to(lq) for job in jobs]

    fetched = [lq.activate(token=f"t{i}")[1] for i in range(len(jobs))]

    # priority 0 first (FIFO), then by priority, FIFO within one priority
    expected = sorted(ids, key=lambda i: (jobs[ids.index(i)].priority, int(i)))
    assert fetched == expected
    assert lq.activate() == [0, 0, 0, 0]
    assert lq.r.hlen(lq.keys.job(ids[0])) == 8  # 6 add fields + processedOn + ats


def test_next_due_time_is_whole_ms_even_with_a_sequence(lq: LuaQueue) -> None:
    lq.add(job_id="late", delay=77)
    lq.r.zadd(lq.keys["delayed"], {"late": delayed_score(NOW + 77, 4095)})
    reply = lq.activate()
    assert reply == [0, 0, 0, NOW + 77]
    assert isinstance(reply[3], int)


def test_a_job_key_that_is_not_a_hash_fails_that_job_and_the_fetch_takes_the_next(
    lq: LuaQueue,
) -> None:
    """Trial finding: a string at the job key made HGETALL raise WRONGTYPE after the id had
    moved to active, so the fetch errored (reported against the previous job) and the id was
    stranded. Now that job goes to failed with its reason, and the same fetch takes the next
    job (so a ``--burst`` run does not stop at it)."""
    lq.add(job_id="bad")
    lq.add(job_id="good")
    lq.r.delete(lq.keys.job("bad"))
    lq.r.set(lq.keys.job("bad"), "not a hash")
    lq.clear_events()

    reply = lq.activate()

    assert reply[1:] == ["good", 0, 0]
    assert lq.lst("active") == ["good"]
    assert lq.zset("failed") == [("bad", NOW)]
    assert lq.r.get(lq.keys.job("bad")) == "not a hash"  # the operator's data is left alone
    assert lq.lock("bad") is None
    reason = f"job key {lq.keys.job('bad')} holds a string, not a job hash"
    assert lq.events() == [
        ("event", "failed", "jobId", "bad", "failedReason", reason, "prev", "active"),
        ("event", "active", "jobId", "good", "prev", "waiting"),
    ]


def test_a_hundred_unreadable_ids_in_a_row_leave_the_marker_set(lq: LuaQueue) -> None:
    for i in range(101):
        lq.add(job_id=f"bad{i}")
        lq.r.delete(lq.keys.job(f"bad{i}"))
        lq.r.set(lq.keys.job(f"bad{i}"), "x")
    lq.r.delete(lq.keys["marker"])

    assert lq.activate() == [0, 0, 0, 0]

    assert len(lq.zset("failed")) == 100 and lq.lst("wait") == ["bad100"]
    assert lq.zset("marker") == [("0", 0)]  # so the worker fetches again at once
    assert lq.activate() == [0, 0, 0, 0] and len(lq.zset("failed")) == 101


def test_a_job_key_that_is_not_a_hash_takes_no_rate_limit_slot(lq: LuaQueue) -> None:
    lq.add(job_id="bad")
    lq.r.delete(lq.keys.job("bad"))
    lq.r.rpush(lq.keys.job("bad"), "x")

    assert lq.activate(limiter_max=5, limiter_duration=1000) == [0, 0, 0, 0]

    assert lq.r.get(lq.keys["limiter"]) is None
    assert lq.zset("failed") == [("bad", NOW)]


def test_a_due_delayed_job_whose_key_is_not_a_hash_does_not_block_the_fetch(
    lq: LuaQueue,
) -> None:
    lq.add(job_id="bad", delay=1)
    lq.add(job_id="good")
    lq.r.delete(lq.keys.job("bad"))
    lq.r.set(lq.keys.job("bad"), "not a hash")

    replies = [lq.activate(now=NOW + 10), lq.activate(now=NOW + 10)]

    assert [r[1] for r in replies] == ["good", 0]  # the promoted one queues behind it
    assert lq.zset("failed") == [("bad", NOW + 10)]
    assert lq.zset("delayed") == [] and lq.lst("active") == ["good"]
