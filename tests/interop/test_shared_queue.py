"""(e) A Node worker and ours on one queue at once: every job runs exactly once, and neither
side's stalled checker touches the other's active jobs (locks are renewed and honoured)."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from typing import Any

import bullmq
import pytest
import redis

from django_bullq import Queue
from django_bullq.core.worker import WorkerOptions
from tests.interop.helpers import Call, Node, behave, run_our_worker_until, stream_events

pytestmark = pytest.mark.interop

JOBS = 200
LOCK_MS = 2000
STALLED_INTERVAL_MS = 500
#: every 5th job outlives one lock duration, so it survives only if its lock is renewed
LONG_MS = 2500
SHORT_MS = 30
CONCURRENCY = 20


async def test_node_and_our_worker_share_one_queue(
    queue: Queue, node: Node, r: redis.Redis
) -> None:
    theirs = node.start(
        "worker",
        {
            "opts": {
                "concurrency": CONCURRENCY,
                "lockDuration": LOCK_MS,
                "stalledInterval": STALLED_INTERVAL_MS,
                "drainDelay": 1,
                "name": "node-w",
            },
            "until_finished": JOBS,
            "timeout_ms": 18000,
        },
    )
    theirs.wait_ready()

    async def add_all() -> None:
        await queue.aadd_bulk(
            [
                (
                    "shared",
                    {"i": i, "sleep_ms": LONG_MS if i % 5 == 0 else SHORT_MS},
                    {"job_id": f"s-{i}"},
                )
                for i in range(JOBS)
            ]
        )

    ours: list[Call] = []
    await run_our_worker_until(
        queue,
        ours,
        JOBS,
        timeout=18,
        options=WorkerOptions(
            concurrency=CONCURRENCY,
            lock_duration=LOCK_MS,
            stalled_interval=STALLED_INTERVAL_MS,
            drain_delay=1.0,
            name="ours-w",
        ),
        during=add_all,
    )
    report = await theirs.aresult(20)
    assert not report["timedOut"] and report["errors"] == []

    runs = Counter([c.id for c in ours] + [str(c["id"]) for c in report["calls"]])
    assert set(runs) == {f"s-{i}" for i in range(JOBS)}
    twice = {job_id: n for job_id, n in runs.items() if n > 1}
    assert not twice, f"jobs run more than once: {twice}"
    assert ours and report["calls"], "both workers must have taken jobs"
    long_ids = {f"s-{i}" for i in range(0, JOBS, 5)}
    assert long_ids & {c.id for c in ours} and long_ids & {str(c["id"]) for c in report["calls"]}

    assert report["stalled"] == []
    assert [e for e in stream_events(r, queue.name) if e["event"] == "stalled"] == []
    assert queue.get_job_counts("completed", "failed", "active", "waiting") == {
        "completed": JOBS,
        "failed": 0,
        "active": 0,
        "waiting": 0,
    }
    node_ids = {str(c["id"]) for c in report["calls"]}
    for job in queue.get_jobs("completed"):
        assert (job.attempts_started, job.attempts_made, job.stalled_counter) == (1, 1, 0), job.id
        assert job.deferred_failure is None
        assert job.returnvalue["by"] == ("node" if job.id in node_ids else "ours")
        assert job.processed_by == ("node-w" if job.id in node_ids else "ours-w")


async def test_pypi_worker_and_ours_share_one_queue(
    queue: Queue, redis_url: str, r: redis.Redis
) -> None:
    """The same with PyPI bullmq's worker (its own lock manager and stalled-check script)."""
    jobs = 100
    theirs: list[str] = []

    async def process(job: Any, token: str) -> Any:
        theirs.append(str(job.id))
        await asyncio.sleep(job.data["sleep_ms"] / 1000)
        return behave(job.data, job.attemptsMade, "pypi")

    pypi = bullmq.Worker(
        queue.name,
        process,
        {
            "connection": redis_url,
            "concurrency": CONCURRENCY,
            "lockDuration": LOCK_MS,
            "stalledInterval": STALLED_INTERVAL_MS,
            "drainDelay": 1,
            "name": "pypi-w",
        },
    )
    stalled_seen: list[str] = []
    pypi.on("stalled", lambda job_id, *_: stalled_seen.append(str(job_id)))

    async def add_all() -> None:
        await queue.aadd_bulk(
            [
                (
                    "shared",
                    {"i": i, "sleep_ms": LONG_MS if i % 5 == 0 else SHORT_MS},
                    {"job_id": f"s-{i}"},
                )
                for i in range(jobs)
            ]
        )

    ours: list[Call] = []
    started = time.monotonic()
    try:
        await run_our_worker_until(
            queue,
            ours,
            jobs,
            timeout=18,
            options=WorkerOptions(
                concurrency=CONCURRENCY,
                lock_duration=LOCK_MS,
                stalled_interval=STALLED_INTERVAL_MS,
                drain_delay=1.0,
            ),
            during=add_all,
        )
    finally:
        await asyncio.wait_for(pypi.close(), 20 - (time.monotonic() - started))

    runs = Counter([c.id for c in ours] + theirs)
    assert set(runs) == {f"s-{i}" for i in range(jobs)}
    assert not {k: n for k, n in runs.items() if n > 1}, "jobs run more than once"
    assert ours and theirs, "both workers must have taken jobs"
    assert stalled_seen == []
    assert [e for e in stream_events(r, queue.name) if e["event"] == "stalled"] == []
    for job in queue.get_jobs("completed"):
        assert (job.attempts_started, job.stalled_counter) == (1, 0), job.id
        assert job.returnvalue["by"] == ("pypi" if job.id in theirs else "ours")
