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

import redis

from django_bullq import Job, Queue
from tests.core.test_case_b14_b16 import pending_ids
from tests.support.workerkit import make_worker


async def test_case_b21_dedup_in_scheduler_template_keeps_the_schedule_running(
    queue: Queue,
) -> None:
    queue.upsert_job_scheduler(
        "w1", {"every": 250}, {"name": "w1", "data": {}, "opts": {"deduplication": {"id": "de_w1"}}}
    )
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


def _active_ids(queue: Queue) -> list[str]:
    return [
        str(x.decode() if isinstance(x, bytes) else x)
        for x in queue.client.lrange(queue.keys["active"], 0, -1)
    ]


async def _run_one_iteration_and_close(
    queue: Queue, admin: redis.Redis, during_finish: bool
) -> None:
    """Start a worker, close it while an iteration runs, and wait until it has stopped.

    ``during_finish``: close while the iteration's finish call is on its way, so that call
    (sent before the close, answered after it) fetches the next, already due, iteration.
    Redis is made to hold the finish with ``CLIENT PAUSE WRITE`` so the order is certain.
    """
    loop = asyncio.get_running_loop()
    ran: list[str] = []

    async def proc(job: Job) -> None:
        ran.append(job.id)
        if during_finish:
            await asyncio.sleep(0.03)  # the next iteration (every 20 ms) is due by now
            admin.client_pause(150, all=False)  # the finish call waits in Redis...
            loop.call_later(0.03, worker.close)  # ...while the worker is told to close
        else:
            loop.call_soon(worker.close)
            await asyncio.sleep(0.03)

    worker = make_worker(queue, proc, concurrency=1)
    await asyncio.wait_for(worker.arun(), 15)
    assert len(ran) == 1, ran


async def test_closing_worker_hands_back_the_iteration_its_finish_fetched(
    queue: Queue, r: redis.Redis
) -> None:
    """A finish call sent just before close() fetches the next iteration: it goes back to wait
    at once (not left active until its lock expires, which also counted a stall)."""
    queue.upsert_job_scheduler("s", {"every": 20}, {"name": "s", "data": {}})
    await _run_one_iteration_and_close(queue, r, during_finish=True)
    assert _active_ids(queue) == []
    assert len(pending_ids(queue, "s")) == 1
    (pending,) = pending_ids(queue, "s")
    assert r.hget(queue.keys.job(pending), "stc") in (None, "0")  # no stall was counted


async def test_closing_a_worker_mid_iteration_100_times_keeps_one_pending_iteration(
    queue: Queue, r: redis.Redis
) -> None:
    """Issue 12 item 8: close a worker mid-iteration 100 times in a row, alternately while
    the iteration runs and while its finish call is on its way; each time the scheduler has
    exactly one pending iteration and nothing is left active."""
    queue.upsert_job_scheduler("s", {"every": 20}, {"name": "s", "data": {}})
    for round_no in range(100):
        await _run_one_iteration_and_close(queue, r, during_finish=round_no % 2 == 0)
        assert _active_ids(queue) == [], round_no
        assert len(pending_ids(queue, "s")) == 1, round_no


async def test_paused_worker_hands_back_the_job_its_finish_fetched(
    queue: Queue, r: redis.Redis
) -> None:
    """The same window for ``pause()``: a job fetched by the last finish goes back to wait."""
    first = queue.add("a", {})
    second = queue.add("b", {})
    loop = asyncio.get_running_loop()
    ran: list[str] = []
    paused: list[asyncio.Task[None]] = []

    async def proc(job: Job) -> None:
        ran.append(job.id)
        r.client_pause(150, all=False)
        loop.call_later(0.03, lambda: paused.append(asyncio.ensure_future(worker.pause())))

    worker = make_worker(queue, proc, concurrency=1)
    task = asyncio.create_task(worker.arun())
    try:
        while not paused:
            await asyncio.sleep(0.01)
        await asyncio.wait_for(paused[0], 10)
        assert ran == [first.id]
        assert _active_ids(queue) == []
        assert queue.get_job_state(second.id) == "waiting"
    finally:
        worker.close()
        await asyncio.wait_for(task, 15)
