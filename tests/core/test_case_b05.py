"""Case B05: FIFO among equal priorities survives a rate-limit push-back (bullmq #1929, #1915)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import pytest

from django_bullq import Job, Queue, Worker
from django_bullq.core.errors import RateLimitError
from tests.support.workerkit import make_worker


def _limited_once_worker(queue: Queue, calls: list[str], limit_ms: int = 250) -> Worker:
    """Worker with limiter {max: 1, duration: 100}; the first call rate-limits for ``limit_ms``."""

    async def process(job: Job) -> str:
        calls.append(job.name)
        if len(calls) == 1:
            await worker.arate_limit(limit_ms)
            raise RateLimitError()
        return job.name

    worker = make_worker(queue, process, limiter_max=1, limiter_duration=100)
    return worker


async def _until(predicate: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.01)


@pytest.mark.parametrize("added", ["before_the_worker", "while_it_runs"])
async def test_case_b05_fifo_among_equal_priorities_after_rate_limit_push_back(
    queue: Queue, added: str
) -> None:
    calls: list[str] = []
    worker = _limited_once_worker(queue, calls)
    if added == "before_the_worker":
        for name in "1234":
            queue.add(name, {}, priority=10)
    task = asyncio.create_task(worker.arun())
    try:
        if added == "while_it_runs":
            queue.add("1", {}, priority=10)
        await _until(lambda: calls == ["1"] and queue.get_job_state("1") == "prioritized")
        if added == "while_it_runs":
            for name in "234":
                queue.add(name, {}, priority=10)
        # the limit is still on: nothing ran since; the pushed-back job is first in line
        assert [j.name for j in queue.get_jobs("prioritized", asc=True)] == ["1", "2", "3", "4"]
        assert queue.get_job("1", required=True).attempts_made == 0  # type: ignore[union-attr]
        await _until(lambda: queue.get_job_counts("completed")["completed"] == 4)
    finally:
        worker.close()
        await asyncio.wait_for(task, 10)
    assert calls == ["1", "1", "2", "3", "4"]


async def test_case_b05_variant_1915_earlier_job_runs_first_after_push_back(queue: Queue) -> None:
    """Two priority-10 jobs added 50 ms apart while the worker runs: the earlier one is fetched,
    pushed back by a rate limit, and still runs before the later one."""
    calls: list[str] = []
    worker = _limited_once_worker(queue, calls, limit_ms=200)
    task = asyncio.create_task(worker.arun())
    try:
        await asyncio.sleep(0.05)
        queue.add("early", {}, priority=10)
        await asyncio.sleep(0.05)
        queue.add("late", {}, priority=10)
        await _until(lambda: queue.get_job_counts("completed")["completed"] == 2)
    finally:
        worker.close()
        await asyncio.wait_for(task, 10)
    assert calls == ["early", "early", "late"]
