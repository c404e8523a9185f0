"""Case B21: a deduplication id in a job scheduler's template must not stop the schedule.

Scaled from the case (every 500 ms, 1 s runs, 10 s) to every 250 ms, 500 ms runs, 5 s.
Contract: iterations are created by the scheduler scripts, which own the "one pending
iteration" rule; the template's ``deduplication`` is stored on each iteration but not applied to
them, so a deduplicated iteration can never break the chain. Runs longer than ``every`` overlap
on a worker with concurrency > 1 (use concurrency 1, or a global concurrency of 1, to serialise
them) — see docs/schedulers.md.
"""

from __future__ import annotations

import asyncio
import time

from django_bullq import Job, Queue
from tests.test_case_b14_b16 import pending_ids
from tests.workerkit import make_worker


async def test_case_b21_dedup_in_scheduler_template_keeps_the_schedule_running(
        queue: Queue) -> None:
    queue.upsert_job_scheduler("w1", {"every": 250}, {
        "name": "w1", "data": {}, "opts": {"deduplication": {"id": "de_w1"}}})
    runs: list[str] = []

    async def proc(job: Job) -> None:
        runs.append(job.id)
        await asyncio.sleep(0.5)

    worker = make_worker(queue, proc, concurrency=4)
    task = asyncio.create_task(worker.arun())
    max_pending = 0
    try:
        end = time.monotonic() + 5
        while time.monotonic() < end:
            max_pending = max(max_pending, len(pending_ids(queue, "w1")))
            await asyncio.sleep(0.02)
    finally:
        worker.close()
        await task
    assert len(runs) >= 16, runs  # 5 s / 250 ms = 20 iterations; the chain never stopped
    assert len(runs) == len(set(runs))
    assert max_pending == 1
    assert len(pending_ids(queue, "w1")) == 1  # the scheduler still has its next iteration
