"""Rate limits shared with the real Node bullmq 6.x (and PyPI bullmq) on one queue.

The limiter lives in shared keys (``limiter``, ``meta.max`` / ``meta.duration``), so whichever
side sets it, every worker with a limiter counts against the same window; a manual rate limit
(``rateLimit`` + ``RateLimitError``) from either side holds the other side's worker too and
spends no attempt.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import bullmq
import pytest
import redis

from django_bullq import Job, Queue, Worker
from django_bullq.core.errors import RateLimitError
from django_bullq.core.limits import MANUAL_LIMIT
from django_bullq.core.worker import WorkerOptions
from tests.interop.helpers import Call, Node, run_our_worker_until, wait_for

pytestmark = pytest.mark.interop

WINDOW_MS = 1000
#: time between an activation (the window starts) and the processor call that we record
MARGIN_MS = 150


def _no_three_starts_in_one_window(starts: list[int], max_jobs: int = 2) -> None:
    starts = sorted(starts)
    for first, last in zip(starts, starts[max_jobs:], strict=False):
        assert last - first >= WINDOW_MS - MARGIN_MS, (
            f"{max_jobs + 1} starts within one window: {starts}"
        )


@pytest.mark.parametrize("limit", ["global-set-by-us", "global-set-by-node", "worker-limiters"])
async def test_one_limiter_binds_node_and_our_workers(queue: Queue, node: Node, limit: str) -> None:
    node_opts: dict[str, Any] = {"concurrency": 3, "drainDelay": 1}
    ours = WorkerOptions(concurrency=3, drain_delay=1.0)
    if limit == "global-set-by-us":
        queue.set_global_rate_limit(2, WINDOW_MS)
    elif limit == "global-set-by-node":
        await node.ainspect(do=[f"globalRateLimit:2:{WINDOW_MS}"])
        assert queue.get_global_rate_limit() == {"max": 2, "duration": WINDOW_MS}
    else:
        node_opts["limiter"] = {"max": 2, "duration": WINDOW_MS}
        ours = WorkerOptions(
            concurrency=3, drain_delay=1.0, limiter_max=2, limiter_duration=WINDOW_MS
        )
    theirs = node.start(
        "limited_worker", {"opts": node_opts, "until_finished": 6, "timeout_ms": 12000}
    )
    theirs.wait_ready()

    async def add_all() -> None:
        await queue.aadd_bulk([("l", {"i": i}) for i in range(6)])

    calls: list[Call] = []
    await run_our_worker_until(queue, calls, 6, timeout=12, options=ours, during=add_all)
    report = await theirs.aresult(15)
    assert not report["timedOut"] and report["errors"] == []
    starts = [c.t for c in calls] + [c["t"] for c in report["calls"]]
    assert len(starts) == 6
    _no_three_starts_in_one_window(starts)


async def test_node_manual_rate_limit_holds_our_worker_without_spending_an_attempt(
    queue: Queue, node: Node, r: redis.Redis
) -> None:
    theirs = node.start(
        "limited_worker",
        {
            "opts": {"limiter": {"max": 10, "duration": 1000}, "drainDelay": 1},
            "until_finished": 1,
            "timeout_ms": 12000,
        },
    )
    theirs.wait_ready()
    job = await queue.aadd("x", {"rate_limit_ms": 1000, "i": 0}, attempts=1)

    async def limited() -> bool:
        return r.get(queue.keys["limiter"]) == str(MANUAL_LIMIT)

    await wait_for(limited, 5, "Node's manual rate limit")
    calls: list[Call] = []
    await run_our_worker_until(
        queue,
        calls,
        1,
        timeout=10,
        options=WorkerOptions(limiter_max=10, limiter_duration=1000, drain_delay=1.0),
    )
    report = await theirs.aresult(15)
    node_calls = report["calls"]
    assert node_calls[0]["limited"] and node_calls[0]["attemptsMade"] == 0
    later = [c.t for c in calls] + [c["t"] for c in node_calls[1:]]
    assert len(later) == 1, "the job ran once after the push-back"
    assert later[0] - node_calls[0]["t"] >= 900
    done = await queue.aget_job(job.id, required=True)
    assert done is not None and done.finished_on is not None
    assert (done.attempts_made, done.attempts_started) == (1, 2)
    assert done.failed_reason is None


async def test_our_manual_rate_limit_holds_the_node_worker(
    queue: Queue, node: Node, r: redis.Redis
) -> None:
    starts: list[int] = []

    async def process(job: Job) -> str:
        starts.append(int(time.time() * 1000))
        if len(starts) == 1:
            await worker.arate_limit(1000)
            raise RateLimitError()
        return "ours"

    worker = Worker(queue, process, WorkerOptions(drain_delay=1.0))
    task = asyncio.create_task(worker.arun())
    theirs = None
    try:
        job = await queue.aadd("x", {"i": 0}, attempts=1)

        async def pushed_back() -> bool:
            return bool(starts) and await queue.aget_job_state(job.id) == "waiting"

        await wait_for(pushed_back, 5, "our push-back", watch=task)
        theirs = node.start(
            "limited_worker",
            {
                "opts": {"limiter": {"max": 10, "duration": 1000}, "drainDelay": 1},
                "until_finished": 1,
                "timeout_ms": 10000,
            },
        )
        report = await theirs.aresult(15)
    finally:
        worker.close()
        await asyncio.wait_for(task, 10)
    later = starts[1:] + [c["t"] for c in report["calls"]]
    assert len(later) == 1
    assert later[0] - starts[0] >= 900
    done = await queue.aget_job(job.id, required=True)
    assert done is not None and (done.attempts_made, done.attempts_started) == (1, 2)


async def test_pypi_global_rate_limit_and_ours_are_one_setting(
    queue: Queue, redis_url: str
) -> None:
    pypi = bullmq.Queue(queue.name, {"connection": redis_url})
    try:
        await pypi.setGlobalRateLimit(2, WINDOW_MS)
        assert await queue.aget_global_rate_limit() == {"max": 2, "duration": WINDOW_MS}
        for i in range(4):
            await pypi.add("l", {"i": i})
        calls: list[Call] = []
        await run_our_worker_until(
            queue, calls, 4, timeout=10, options=WorkerOptions(concurrency=4, drain_delay=1.0)
        )
        _no_three_starts_in_one_window([c.t for c in calls])
        await queue.aset_global_rate_limit(5, 3000)
        assert await pypi.getGlobalRateLimit() == {"max": 5, "duration": 3000}
        await queue.arate_limit(4000)
        assert 3000 < await pypi.getRateLimitTtl() <= 4000
    finally:
        await pypi.close()


async def test_our_global_concurrency_caps_the_node_worker(queue: Queue, node: Node) -> None:
    await queue.aset_global_concurrency(1)
    await queue.aadd_bulk([("c", {"i": i, "sleep_ms": 150}) for i in range(4)])
    report = await node.arun(
        "worker",
        {"opts": {"concurrency": 4, "drainDelay": 1}, "until_finished": 4, "timeout_ms": 10000},
        timeout=15,
    )
    assert not report["timedOut"]
    jobs = sorted(await queue.aget_jobs("completed"), key=lambda j: j.processed_on or 0)
    assert len(jobs) == 4
    for before, after in zip(jobs, jobs[1:], strict=False):
        assert before.finished_on is not None and after.processed_on is not None
        assert after.processed_on >= before.finished_on, "two jobs were active at once"
