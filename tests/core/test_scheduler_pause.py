"""Pausing one job scheduler (ours: docs/schedulers.md, "Pausing one scheduler"), on real
Redis: one atomic transition out of ``repeat``, a resume by upsert that keeps the iteration
count, and the paused set kept tidy by upsert, remove and obliterate."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
import redis

from django_bullq import Queue
from django_bullq.core.scheduler import PAUSED_FIELD, PAUSED_SCHEDULERS

TEMPLATE = {"name": "tick", "data": {"t": 1}, "opts": {"attempts": 3}}


def pending_runs(queue: Queue, scheduler_id: str) -> list[str]:
    ids = queue.get_job_ids("waiting", "delayed", "prioritized")
    return [i for i in ids if i.startswith(f"repeat:{scheduler_id}:")]


def removed_events(r: redis.Redis, queue: Queue) -> list[str]:
    entries: list[Any] = r.xrange(queue.keys["events"])
    return [f["jobId"] for _, f in entries if f.get("event") == "removed"]


def finish(r: redis.Redis, queue: Queue, job_id: str) -> None:
    """As a worker's run of ``job_id`` ends: out of the pending states, into completed."""
    r.lrem(queue.keys["wait"], 0, job_id)
    r.zrem(queue.keys["delayed"], job_id)
    r.zadd(queue.keys["completed"], {job_id: int(time.time() * 1000)})


def test_pause_takes_it_out_of_repeat_and_removes_its_pending_run_in_one_step(
    queue: Queue, r: redis.Redis
) -> None:
    run = queue.upsert_job_scheduler("held", {"every": 60_000}, TEMPLATE)
    assert run is not None and pending_runs(queue, "held") == [run.id]
    before = int(time.time() * 1000)

    assert queue.pause_job_scheduler("held") == run.id

    assert r.zscore(queue.keys["repeat"], "held") is None
    assert pending_runs(queue, "held") == [] and not r.exists(queue.keys.job(run.id))
    assert run.id in removed_events(r, queue)
    assert r.smembers(queue.keys[PAUSED_SCHEDULERS]) == {"held"}
    paused = queue.get_job_scheduler("held")
    assert paused is not None and paused.paused and paused.next_millis is None
    assert paused.paused_ms is not None and paused.paused_ms >= before
    assert paused.name == "tick" and paused.data == {"t": 1} and paused.every == 60_000
    assert queue.get_job_schedulers() == []  # what BullMQ's dashboards list: nothing


def test_pause_refuses_a_missing_or_paused_scheduler_and_writes_nothing(
    queue: Queue, r: redis.Redis
) -> None:
    with pytest.raises(ValueError, match="no job scheduler 'nope'"):
        queue.pause_job_scheduler("nope")
    queue.upsert_job_scheduler("held", {"every": 60_000}, TEMPLATE)
    queue.pause_job_scheduler("held")
    mark = r.hget(queue.keys["repeat:held"], PAUSED_FIELD)
    with pytest.raises(ValueError, match="paused already"):
        queue.pause_job_scheduler("held")
    assert r.hget(queue.keys["repeat:held"], PAUSED_FIELD) == mark
    assert not r.exists(queue.keys["bullq:paused-schedulers:nope"])


def test_a_run_that_has_started_is_left_to_finish(queue: Queue, r: redis.Redis) -> None:
    run = queue.upsert_job_scheduler("held", {"every": 60_000, "immediately": True}, TEMPLATE)
    assert run is not None
    r.lrem(queue.keys["wait"], 0, run.id)  # as a worker's moveToActive takes it
    r.rpush(queue.keys["active"], run.id)

    assert queue.pause_job_scheduler("held") is None

    assert r.exists(queue.keys.job(run.id))
    assert r.lrange(queue.keys["active"], 0, -1) == [run.id]


def test_resume_upserts_the_stored_definition_and_keeps_the_iteration_count(
    queue: Queue, r: redis.Redis
) -> None:
    queue.upsert_job_scheduler("held", {"every": 60_000}, TEMPLATE)
    queue.upsert_job_scheduler("held", {"every": 60_000}, TEMPLATE)
    counted = queue.get_job_scheduler("held")
    queue.pause_job_scheduler("held")

    run = queue.resume_job_scheduler("held")

    assert run is not None and run.name == "tick" and run.data == {"t": 1}
    assert run.opts["attempts"] == 3
    after = queue.get_job_scheduler("held")
    assert after is not None and not after.paused and after.next_millis is not None
    assert counted is not None and after.iteration_count == counted.iteration_count
    assert not r.hexists(queue.keys["repeat:held"], PAUSED_FIELD)
    assert r.smembers(queue.keys[PAUSED_SCHEDULERS]) == set()
    assert pending_runs(queue, "held") == [run.id]
    with pytest.raises(ValueError, match="is not paused"):
        queue.resume_job_scheduler("held")


def test_a_schedule_that_is_over_stays_paused_on_resume(queue: Queue) -> None:
    end_ms = int(time.time() * 1000) + 600
    queue.upsert_job_scheduler("short", {"every": 60_000, "end_date": end_ms}, TEMPLATE)
    queue.pause_job_scheduler("short")
    time.sleep(0.7)

    assert queue.resume_job_scheduler("short") is None

    left = queue.get_job_scheduler("short")
    assert left is not None and left.paused
    assert [s.id for s in queue.get_paused_job_schedulers()] == ["short"]


def test_any_upsert_of_the_id_resumes_it_and_leaves_the_paused_set(
    queue: Queue, r: redis.Redis
) -> None:
    queue.upsert_job_scheduler("held", {"every": 60_000}, TEMPLATE)
    queue.pause_job_scheduler("held")

    queue.upsert_job_scheduler("held", {"every": 30_000}, TEMPLATE)

    scheduler = queue.get_job_scheduler("held")
    assert scheduler is not None and not scheduler.paused and scheduler.every == 30_000
    assert r.smembers(queue.keys[PAUSED_SCHEDULERS]) == set()


def test_paused_schedulers_lists_only_those_still_paused(queue: Queue, r: redis.Redis) -> None:
    for sid in ("b", "a", "c"):
        queue.upsert_job_scheduler(sid, {"every": 60_000}, TEMPLATE)
        queue.pause_job_scheduler(sid)
    # "c" resumed by a Node upsert, which rewrites the hash and knows nothing of the set
    r.hdel(queue.keys["repeat:c"], PAUSED_FIELD)
    r.sadd(queue.keys[PAUSED_SCHEDULERS], "gone")

    assert [s.id for s in queue.get_paused_job_schedulers()] == ["a", "b"]


def test_remove_takes_a_paused_scheduler_and_its_set_member(queue: Queue, r: redis.Redis) -> None:
    queue.upsert_job_scheduler("held", {"every": 60_000}, TEMPLATE)
    queue.pause_job_scheduler("held")

    assert queue.remove_job_scheduler("held") is True

    assert not r.exists(queue.keys["repeat:held"])
    assert r.smembers(queue.keys[PAUSED_SCHEDULERS]) == set()
    assert queue.get_paused_job_schedulers() == []


def test_obliterate_removes_paused_schedulers_with_the_queue(queue: Queue, r: redis.Redis) -> None:
    queue.upsert_job_scheduler("held", {"every": 60_000}, TEMPLATE)
    queue.pause_job_scheduler("held")
    queue.pause()

    queue.obliterate()

    assert r.keys(queue.keys.key_prefix + "*") == []


def test_async_pause_and_resume(queue: Queue) -> None:
    async def main() -> tuple[str | None, Any, list[Any]]:
        queue.upsert_job_scheduler("held", {"every": 60_000}, TEMPLATE)
        removed = await queue.apause_job_scheduler("held")
        listed = await queue.aget_paused_job_schedulers()
        return removed, await queue.aresume_job_scheduler("held"), listed

    removed, run, listed = asyncio.run(main())
    assert removed is not None and removed.startswith("repeat:held:")
    assert [s.id for s in listed] == ["held"]
    assert run is not None and run.id.startswith("repeat:held:")


def test_a_paused_scheduler_that_made_its_limit_of_runs_stays_over_on_resume(
    queue: Queue, r: redis.Redis
) -> None:
    # the resume's upsert skipped the limit check (it asked for a `repeat` member), so a
    # limit=1 scheduler paused before its one run and resumed after it ran again
    run = queue.upsert_job_scheduler("twice", {"every": 60_000, "limit": 2}, TEMPLATE)
    assert run is not None
    r.hset(queue.keys["repeat:twice"], "ic", 2)  # as after its two runs were created
    queue.pause_job_scheduler("twice")  # its second run, still pending, goes

    assert queue.resume_job_scheduler("twice") is None

    assert pending_runs(queue, "twice") == []
    left = queue.get_job_scheduler("twice")
    assert left is not None and left.paused


def test_a_scheduler_whose_schedule_is_over_cannot_be_paused(queue: Queue, r: redis.Redis) -> None:
    run = queue.upsert_job_scheduler("once", {"every": 60_000, "limit": 1}, TEMPLATE)
    assert run is not None
    finish(r, queue, run.id)  # its one run done: nothing pending, ic == limit
    with pytest.raises(ValueError, match="schedule is over"):
        queue.pause_job_scheduler("once")
    ended = queue.upsert_job_scheduler(
        "ended", {"every": 1000, "end_date": int(time.time() * 1000) + 300}, TEMPLATE
    )
    assert ended is not None
    time.sleep(0.4)
    finish(r, queue, ended.id)
    with pytest.raises(ValueError, match="schedule is over"):
        queue.pause_job_scheduler("ended")
    assert r.zscore(queue.keys["repeat"], "once") is not None  # nothing written
