"""Rate limits and the global concurrency cap against Redis (protocol §5.12, §5.13)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import pytest
import redis

from django_bullq import Job, Queue, Worker
from django_bullq.core.errors import RATE_LIMIT_ERROR, RateLimitError
from django_bullq.core.limits import MANUAL_LIMIT
from tests.support.workerkit import make_worker, run_until


def test_global_rate_limit_is_stored_in_meta_and_read_back(queue: Queue, r: redis.Redis) -> None:
    assert queue.get_global_rate_limit() is None
    queue.set_global_rate_limit(3, 2000)
    assert r.hmget(queue.keys["meta"], "max", "duration") == ["3", "2000"]
    assert queue.get_global_rate_limit() == {"max": 3, "duration": 2000}
    queue.remove_global_rate_limit()
    assert queue.get_global_rate_limit() is None
    with pytest.raises(ValueError):
        queue.set_global_rate_limit(0, 1000)
    with pytest.raises(ValueError):
        queue.set_global_rate_limit(2, True)  # type: ignore[arg-type]  # noqa: FBT003 - a bool duration is refused


def test_global_concurrency_is_stored_in_meta_and_read_back(queue: Queue, r: redis.Redis) -> None:
    assert queue.get_global_concurrency() is None
    queue.set_global_concurrency(2)
    assert r.hget(queue.keys["meta"], "concurrency") == "2"
    assert queue.get_global_concurrency() == 2
    queue.remove_global_concurrency()
    assert queue.get_global_concurrency() is None
    with pytest.raises(ValueError):
        queue.set_global_concurrency(0)


def test_manual_rate_limit_sets_the_limiter_and_ttl_reads(queue: Queue, r: redis.Redis) -> None:
    assert queue.get_rate_limit_ttl() == 0
    queue.rate_limit(5000)
    assert r.get(queue.keys["limiter"]) == str(MANUAL_LIMIT)
    assert 4000 < queue.get_rate_limit_ttl() <= 5000
    assert 4000 < queue.get_rate_limit_ttl(max_jobs=10) <= 5000
    assert queue.remove_rate_limit_key() == 1
    assert queue.get_rate_limit_ttl() == 0
    # a counting window that is not full yet is not a limit
    r.set(queue.keys["limiter"], 1, px=5000)
    queue.set_global_rate_limit(2, 5000)
    assert queue.get_rate_limit_ttl() == 0
    r.set(queue.keys["limiter"], 2, px=5000)
    assert queue.get_rate_limit_ttl() > 4000
    with pytest.raises(ValueError):
        queue.rate_limit(0)


async def test_async_twins(queue: Queue) -> None:
    await queue.aset_global_rate_limit(4, 1000)
    assert await queue.aget_global_rate_limit() == {"max": 4, "duration": 1000}
    await queue.aremove_global_rate_limit()
    await queue.aset_global_concurrency(3)
    assert await queue.aget_global_concurrency() == 3
    await queue.aremove_global_concurrency()
    assert await queue.aget_global_concurrency() is None
    await queue.arate_limit(3000)
    assert 2000 < await queue.aget_rate_limit_ttl() <= 3000
    assert await queue.aremove_rate_limit_key() == 1


async def test_global_limiter_is_shared_by_two_workers(queue: Queue) -> None:
    queue.set_global_rate_limit(2, 500)
    starts: list[float] = []

    async def record(job: Job) -> None:
        starts.append(time.monotonic())

    for i in range(6):
        queue.add("l", {"i": i})
    other = make_worker(queue, record, concurrency=3)
    other_task = asyncio.create_task(other.arun())
    try:
        await run_until(make_worker(queue, record, concurrency=3), lambda: len(starts) >= 6)
    finally:
        other.close()
        await asyncio.wait_for(other_task, 10)
    starts.sort()
    # 2 activations per 500 ms window over both workers (unlimited: all within a few ms)
    assert starts[2] - starts[0] >= 0.4 and starts[4] - starts[2] >= 0.4
    assert queue.get_job_counts("completed")["completed"] == 6


async def test_worker_limiter_duration_wins_over_the_global_one(queue: Queue) -> None:
    """§5.12 asymmetry: meta.max wins over the worker's max, the worker's duration over meta's."""
    queue.set_global_rate_limit(1, 60_000)
    starts: list[float] = []

    async def record(job: Job) -> None:
        starts.append(time.monotonic())

    for i in range(3):
        queue.add("l", {"i": i})
    worker = make_worker(queue, record, limiter_max=100, limiter_duration=300)
    await run_until(worker, lambda: len(starts) >= 3, timeout=5)
    starts.sort()
    assert starts[1] - starts[0] >= 0.25 and starts[2] - starts[1] >= 0.25


def test_limiter_max_needs_a_duration(queue: Queue) -> None:
    with pytest.raises(ValueError):
        make_worker(queue, lambda job: None, limiter_max=2)


@pytest.mark.parametrize("style", ["class", "message"])
async def test_manual_rate_limit_does_not_spend_an_attempt(queue: Queue, style: str) -> None:
    calls: list[tuple[float, int]] = []

    async def process(job: Job) -> str:
        calls.append((time.monotonic(), job.attempts_made))
        if len(calls) == 1:
            await worker.arate_limit(400)
            if style == "class":
                raise RateLimitError()
            raise Exception(RATE_LIMIT_ERROR)  # what a Node-style processor throws
        return "done"

    job = queue.add("x", {}, attempts=1)
    worker = make_worker(queue, process)
    await run_until(worker, lambda: len(calls) >= 2 and job.refresh().finished_on is not None)
    assert calls[1][0] - calls[0][0] >= 0.35, "the worker waited for the limit"
    assert [c[1] for c in calls] == [0, 0]
    job.refresh()
    assert job.returnvalue == "done"
    assert (job.attempts_made, job.attempts_started) == (1, 2)
    assert job.stacktrace == [] and job.failed_reason is None


async def test_sync_processor_rate_limits_through_the_worker(queue: Queue) -> None:
    calls: list[float] = []

    def process(job: Job) -> None:
        calls.append(time.monotonic())
        if len(calls) == 1:
            worker.rate_limit(300)
            raise RateLimitError()

    queue.add("x", {})
    worker = make_worker(queue, process)
    await run_until(worker, lambda: queue.get_job_counts("completed")["completed"] == 1)
    assert calls[1] - calls[0] >= 0.25


async def test_global_concurrency_caps_two_workers(queue: Queue) -> None:
    queue.set_global_concurrency(2)
    active = 0
    peak = 0
    done: list[Any] = []

    async def process(job: Job) -> None:
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        await asyncio.sleep(0.1)
        active -= 1
        done.append(job.id)

    for i in range(8):
        queue.add("c", {"i": i})
    other = make_worker(queue, process, concurrency=3)
    other_task = asyncio.create_task(other.arun())
    try:
        await run_until(make_worker(queue, process, concurrency=3), lambda: len(done) >= 8)
    finally:
        other.close()
        await asyncio.wait_for(other_task, 10)
    assert peak == 2


# -------------------------------------------------------------------------------------------------
# Case B05: FIFO among equal priorities survives a rate-limit push-back (bullmq #1929, #1915).


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


async def test_close_during_a_fetch_that_meets_the_rate_limit_stops_at_once(
    queue: Queue, monkeypatch: pytest.MonkeyPatch
) -> None:
    """close() while a fetch is on its way that comes back rate limited (30 s): the worker
    used to clear the wake-up close() had set and sleep the whole limit out."""
    worker = make_worker(queue, lambda job: None, limiter_max=1, limiter_duration=60_000)
    closed = asyncio.Event()

    async def fetch_then_closed() -> tuple[int, int, float]:
        await asyncio.sleep(0.05)
        worker.close()  # as a signal handler or a test does, while the fetch is in flight
        closed.set()
        return 0, 30_000, 0.0

    monkeypatch.setattr(worker, "_fetch_into_slots", fetch_then_closed)
    task = asyncio.create_task(worker.arun())
    await asyncio.wait_for(closed.wait(), 5)
    start = time.monotonic()
    await asyncio.wait_for(task, 10)
    assert time.monotonic() - start < 2.0
