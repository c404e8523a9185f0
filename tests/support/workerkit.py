"""Helpers to run a core Worker inside async tests with a bounded wait."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from django_bullq import Queue, Worker
from django_bullq.core.worker import WorkerOptions

FAST = dict(drain_delay=0.2, stalled_interval=30_000, maintenance_interval_ms=0)


def make_worker(queue: Queue, processor: Callable[..., Any], **options: Any) -> Worker:
    return Worker(queue, processor, WorkerOptions(**{**FAST, **options}))


async def run_until(worker: Worker, condition: Callable[[], bool], timeout: float = 10.0) -> float:
    """Run ``worker`` until ``condition()`` holds; returns the seconds it took.

    Raises:
        AssertionError: the condition did not hold within ``timeout`` seconds.
    """
    task = asyncio.create_task(worker.arun())
    start = time.monotonic()
    try:
        while not condition():
            if task.done():
                task.result()
                raise AssertionError("worker stopped early")
            if time.monotonic() - start > timeout:
                raise AssertionError(f"condition not met within {timeout} s")
            await asyncio.sleep(0.02)
        return time.monotonic() - start
    finally:
        worker.close()
        await asyncio.wait_for(task, 15)


def dead_worker_fetch(queue: Queue, lock_ms: int = 100) -> list[Any]:
    """Fetch a job the way a worker that then dies would: locked with a short TTL, never renewed."""
    return queue.scripts.run(
        "moveToActive",
        queue.fetch_keys(),
        [queue.keys.key_prefix, "dead-worker:1", lock_ms, int(time.time() * 1000), 0, 0, ""],
    )


def events(r: Any, queue: Queue, name: str | None = None) -> list[dict[str, str]]:
    """Entries of the queue's events stream (optionally only one event name)."""
    entries = [fields for _, fields in r.xrange(queue.keys["events"])]
    return [e for e in entries if name is None or e.get("event") == name]


async def run_all_until(
    workers: list[Worker], condition: Callable[[], bool], timeout: float = 10.0
) -> None:
    """Run several workers on this loop until ``condition()`` holds, then close them all.

    Raises:
        AssertionError: the condition did not hold within ``timeout`` seconds, or a worker
            stopped early (its own error is raised instead when it has one).
    """
    tasks = [asyncio.create_task(w.arun()) for w in workers]
    start = time.monotonic()
    try:
        while not condition():
            for task in tasks:
                if task.done():
                    task.result()
                    raise AssertionError("worker stopped early")
            if time.monotonic() - start > timeout:
                raise AssertionError(f"condition not met within {timeout} s")
            await asyncio.sleep(0.02)
    finally:
        for worker in workers:
            worker.close()
        await asyncio.gather(*(asyncio.wait_for(t, 15) for t in tasks))
