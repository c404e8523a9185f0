"""reprocessJob-9.lua (job.retry): return codes 1, -1 missing job, -3 not in the given set."""

from __future__ import annotations

from tests.lua.factories import seed_finished
from tests.lua.helpers import NOW, LuaQueue, prioritized_score


def reprocess(
    lq: LuaQueue,
    job_id: str,
    state: str = "failed",
    *,
    reset_made: bool = False,
    reset_started: bool = False,
) -> int:
    keys = [lq.keys.job(job_id), lq.keys["events"], lq.keys[state]] + [
        lq.keys[s] for s in ("wait", "meta", "active", "prioritized", "pc", "marker")
    ]
    return int(
        lq.run(
            "reprocessJob",
            keys,
            [lq.prefix, job_id, state, "1" if reset_made else "0", "1" if reset_started else "0"],
        )
    )


def test_failed_job_back_to_wait(lq: LuaQueue) -> None:
    (job_id,) = seed_finished(lq, "failed", [NOW])
    lq.r.hset(lq.keys.job(job_id), mapping={"failedReason": "x", "ats": "1", "processedOn": NOW})
    assert reprocess(lq, job_id) == 1
    assert lq.lst("wait") == [job_id] and lq.zset("failed") == []
    job = lq.job(job_id)
    assert job["atm"] == "1" and job["ats"] == "1"
    assert not {"failedReason", "finishedOn", "processedOn"} & set(job)
    assert lq.events() == [("event", "waiting", "jobId", job_id, "prev", "failed")]
    assert lq.zset("marker") == [("0", 0)]


def test_reset_attempts_and_priority_and_lifo(lq: LuaQueue) -> None:
    a, b, c = seed_finished(
        lq,
        "completed",
        [NOW, NOW, NOW],
        opts=['{"attempts":0}', '{"attempts":0,"lifo":true}', '{"attempts":0}'],
    )
    lq.r.hset(lq.keys.job(a), mapping={"priority": "4", "ats": "2"})
    assert reprocess(lq, a, "completed", reset_made=True, reset_started=True) == 1
    assert lq.zset("prioritized") == [(a, prioritized_score(4, 1))]
    assert "atm" not in lq.job(a) and "ats" not in lq.job(a)
    assert reprocess(lq, c, "completed") == 1
    assert reprocess(lq, b, "completed") == 1
    assert lq.lst("wait") == [c, b]  # lifo: RPUSH = runs next


def test_missing_job_and_wrong_state(lq: LuaQueue) -> None:
    assert reprocess(lq, "ghost") == -1
    (job_id,) = seed_finished(lq, "completed", [NOW])
    assert reprocess(lq, job_id, "failed") == -3
    assert lq.zset("completed") == [(job_id, NOW)]
    assert lq.events() == []


def test_a_job_key_that_is_not_a_hash_is_refused_and_stays_where_it_is(lq: LuaQueue) -> None:
    """Trial finding: retrying such a job took it out of failed, then errored: it was lost."""
    lq.r.set(lq.keys.job("s"), "written by hand")
    lq.r.zadd(lq.keys["failed"], {"s": NOW})

    assert reprocess(lq, "s") == -1

    assert lq.zset("failed") == [("s", NOW)] and lq.lst("wait") == []
