"""Case B23: the stalled / failed events of a job that stalls until it exhausts maxStalledCount.

Contract (docs/workers.md, "Stalled jobs"): one ``stalled`` event per recovery (the job runs
again), none for the stall that exhausts ``maxStalledCount``; that stall ends in exactly one
``failed`` event with ``prev: active`` and BullMQ's reason text.
"""

from __future__ import annotations

import asyncio

import redis

from django_bullq import Job, Queue
from tests.support.workerkit import events, make_worker, run_until

REASON = "job stalled more than allowable limit"


async def test_case_b23_two_stalled_events_then_one_failed(queue: Queue, r: redis.Redis) -> None:
    calls: list[int] = []

    async def sleeper(job: Job) -> str:
        calls.append(job.attempts_started)
        await asyncio.sleep(1.0)
        return "never stored: the lock is gone"

    job = queue.add("sleepy", {})
    worker = make_worker(
        queue,
        sleeper,
        skip_lock_renewal=True,
        lock_duration=100,
        stalled_interval=50,
        max_stalled_count=2,
    )
    await run_until(worker, lambda: queue.get_job_state(job.id) == "failed", timeout=9)

    mine = [e for e in events(r, queue) if e.get("jobId") == job.id]
    kinds = [e["event"] for e in mine]
    assert kinds.count("stalled") == 2, kinds
    assert kinds.count("failed") == 1, kinds
    failed = next(e for e in mine if e["event"] == "failed")
    assert (failed["prev"], failed["failedReason"]) == ("active", REASON)
    assert kinds.index("failed") > max(i for i, k in enumerate(kinds) if k == "stalled")
    # three runs, each cut short by a stall; the third stall fails the job without a 4th run
    assert len(calls) == 3
    got = queue.get_job(job.id)
    assert got is not None
    assert (got.stalled_counter, got.failed_reason, got.deferred_failure) == (3, REASON, None)


async def test_skip_lock_renewal_lets_the_lock_expire(queue: Queue, r: redis.Redis) -> None:
    """Without ``skip_lock_renewal`` the same job keeps its lock and completes."""

    async def sleeper(job: Job) -> str:
        await asyncio.sleep(0.5)
        return "ok"

    job = queue.add("sleepy", {})
    worker = make_worker(
        queue, sleeper, lock_duration=200, stalled_interval=50, max_stalled_count=2
    )
    await run_until(worker, lambda: queue.get_job_state(job.id) == "completed", timeout=9)
    assert events(r, queue, "stalled") == []
