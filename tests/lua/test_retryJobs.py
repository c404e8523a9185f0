"""retryJobs-6.lua: failed / completed → wait, finished at or before a timestamp, in batches."""

from __future__ import annotations

from tests.lua.factories import seed_finished
from tests.lua.helpers import NOW, LuaQueue


def retry_jobs(lq: LuaQueue, state: str, count: int, timestamp: int) -> int:
    keys = [lq.keys[s] for s in ("wait", "active", "meta", "events", "marker", state)]
    return int(lq.run("retryJobs", keys, [lq.prefix, count, timestamp, state]))


def test_moves_old_failed_jobs_and_clears_result_fields(lq: LuaQueue) -> None:
    ids = seed_finished(lq, "failed", [NOW - 3000, NOW - 2000, NOW + 5000])
    for i in ids:
        lq.r.hset(lq.keys.job(i), mapping={"failedReason": "boom", "processedOn": NOW})

    assert retry_jobs(lq, "failed", 1, NOW) == 1
    assert retry_jobs(lq, "failed", 1, NOW) == 1
    assert retry_jobs(lq, "failed", 1, NOW) == 0

    assert lq.zset("failed") == [("f2", NOW + 5000)]
    assert lq.lst("wait") == ["f1", "f0"]
    job = lq.job("f0")
    assert "finishedOn" not in job and "processedOn" not in job and "failedReason" not in job
    assert job["atm"] == "1"  # attempts made are kept
    assert lq.zset("marker") == [("0", 0)]
    assert [e[1:6] for e in lq.events()] == [
        ("waiting", "jobId", "f0", "prev", "failed"),
        ("waiting", "jobId", "f1", "prev", "failed"),
    ]


def test_completed_child_rejoins_parent_dependencies(lq: LuaQueue) -> None:
    (child,) = seed_finished(lq, "completed", [NOW - 10])
    parent_key = lq.keys.job("parent")
    lq.r.hset(parent_key, mapping={"name": "p", "data": "{}"})
    lq.r.hset(lq.keys.job(child), mapping={"parentKey": parent_key, "returnvalue": "1"})
    assert retry_jobs(lq, "completed", 10, NOW) == 1
    assert lq.members("parent:dependencies") == {lq.keys.job(child)}
    assert "returnvalue" not in lq.job(child)


def test_a_job_key_that_is_not_a_hash_is_retried_for_the_fetch_to_fail(lq: LuaQueue) -> None:
    """Trial finding: retry_jobs errored half-way on such a job, with it out of failed."""
    ids = seed_finished(lq, "failed", [NOW - 2])
    lq.r.set(lq.keys.job("s"), "written by hand")
    lq.r.zadd(lq.keys["failed"], {"s": NOW - 1})

    assert retry_jobs(lq, "failed", 10, NOW) == 2

    assert sorted(lq.lst("wait")) == sorted([ids[0], "s"]) and lq.zset("failed") == []
