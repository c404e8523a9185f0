"""A job whose code raises what is not an ``Exception`` (``SystemExit``, ``KeyboardInterrupt``,
``asyncio.CancelledError``) fails its own attempt with a readable reason; the worker, its other
jobs and the jobs after it go on (new-user trial: ``sys.exit()`` in a task stopped the worker,
and the job then stopped every worker that took it after its lock expired; a task raising
``CancelledError`` was left active with no log line)."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from typing import Any

import pytest

from django_bullq import Job, JobOptions, Queue
from tests.support.workerkit import make_worker, run_until

ABORTS: dict[str, Callable[[], BaseException]] = {
    "SystemExit": lambda: SystemExit(3),
    "KeyboardInterrupt": KeyboardInterrupt,
    "CancelledError": asyncio.CancelledError,
}


def _sync_processor(kind: str) -> Callable[[Job], Any]:
    def processor(job: Job) -> Any:
        if job.name == "abort":
            if kind == "SystemExit":
                sys.exit(3)
            raise ABORTS[kind]()
        return "ok"

    return processor


def _async_processor(kind: str) -> Callable[[Job], Any]:
    async def processor(job: Job) -> Any:
        await asyncio.sleep(0)
        if job.name == "abort":
            raise ABORTS[kind]()
        return "ok"

    return processor


@pytest.mark.parametrize("kind", sorted(ABORTS))
@pytest.mark.parametrize("flavour", ["def", "async def"])
async def test_a_job_raising_a_base_exception_fails_alone_and_the_worker_goes_on(
    queue: Queue, kind: str, flavour: str
) -> None:
    aborting = queue.add("abort", {}, JobOptions(attempts=2))
    others = [queue.add("fine", {"n": n}) for n in range(5)]
    make = _sync_processor if flavour == "def" else _async_processor
    worker = make_worker(queue, make(kind), concurrency=2)
    await run_until(worker, lambda: worker.processed == 5 and worker.failed == 1)
    failed = queue.get_job(aborting.id)
    assert failed is not None and failed.failed_reason is not None
    assert queue.get_job_state(aborting.id) == "failed"
    assert failed.attempts_made == 2  # each attempt failed by its own attempts, no stall
    assert kind in failed.failed_reason
    assert "the job raised" in failed.failed_reason
    for job in others:
        assert queue.get_job_state(job.id) == "completed"
    assert queue.get_job_counts("active")["active"] == 0
