"""The stalled-job protocol across libraries: a worker that dies mid-job (SIGKILL, so its lock is
never renewed nor released) has its job recovered by the *other* library's stalled checker; past
``maxStalledCount`` the job carries ``defa`` and the next worker fails it without running it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import redis

from django_bullq import Queue
from django_bullq.core.worker import WorkerOptions
from tests.interop.helpers import (
    Call,
    Node,
    NodeProcess,
    run_our_worker_until,
    stream_events,
    wait_for,
)

pytestmark = pytest.mark.interop

REPO_ROOT = Path(__file__).resolve().parents[2]
STALL_REASON = "job stalled more than allowable limit"


def stalled_events(r: redis.Redis, queue: Queue) -> list[dict[str, str]]:
    return [e for e in stream_events(r, queue.name) if e["event"] == "stalled"]


@pytest.mark.parametrize("max_stalled", [1, 0])
async def test_node_recovers_the_job_of_our_dead_worker(
    queue: Queue, node: Node, r: redis.Redis, redis_url: str, max_stalled: int
) -> None:
    job = await queue.aadd("orphan", {"i": 1}, job_id="orphan-1")
    ours = NodeProcess(
        [sys.executable, "-m", "tests.interop.our_worker_proc", redis_url, queue.name, "1000"],
        "our_worker_proc",
        cwd=REPO_ROOT,
    )
    try:
        ours.wait_ready(15)
    finally:
        ours.kill()
    assert await queue.aget_job_state(job.id) == "active"

    report = await node.arun(
        "worker",
        {
            "opts": {
                "lockDuration": 1000,
                "stalledInterval": 500,
                "maxStalledCount": max_stalled,
                "drainDelay": 1,
            },
            "until_finished": 1,
            "timeout_ms": 12000,
        },
    )
    assert not report["timedOut"] and report["stalled"] == ["orphan-1"]
    got = await queue.aget_job(job.id, required=True)
    assert got is not None and got.stalled_counter == 1
    assert len(stalled_events(r, queue)) == 1
    if max_stalled:
        assert [c["id"] for c in report["calls"]] == ["orphan-1"]
        assert await queue.aget_job_state(job.id) == "completed"
        assert (got.attempts_started, got.attempts_made) == (2, 1)
        assert got.returnvalue == {"by": "node", "i": 1, "attempt": 0}
    else:
        assert report["calls"] == [], "a job past maxStalledCount must not run again"
        assert await queue.aget_job_state(job.id) == "failed"
        assert got.failed_reason == STALL_REASON
        assert got.deferred_failure is None


@pytest.mark.parametrize("max_stalled", [1, 0])
async def test_we_recover_the_job_of_a_dead_node_worker(
    queue: Queue, node: Node, r: redis.Redis, max_stalled: int
) -> None:
    theirs = node.start(
        "worker",
        {
            "opts": {"lockDuration": 1000, "stalledInterval": 1000, "drainDelay": 1},
            "hang": True,
            "timeout_ms": 15000,
        },
    )
    try:
        theirs.wait_ready()
        job = await queue.aadd("orphan", {"i": 1}, job_id="orphan-1")
        await wait_for(lambda: _is_active(queue, job.id), 10, "Node to take the job")
    finally:
        theirs.kill()

    calls: list[Call] = []
    await run_our_worker_until(
        queue,
        calls,
        1,
        options=WorkerOptions(
            lock_duration=1000, stalled_interval=500, max_stalled_count=max_stalled, drain_delay=1.0
        ),
    )
    got = await queue.aget_job(job.id, required=True)
    assert got is not None and got.stalled_counter == 1
    events = stalled_events(r, queue)
    # Case B23 contract: our checker emits `stalled` only for a stall after which the job runs
    # again; the stall past maxStalledCount ends in one `failed` (Node 6.7's checker emits both).
    assert [e["jobId"] for e in events] == (["orphan-1"] if max_stalled else [])
    if max_stalled:
        assert [c.id for c in calls] == ["orphan-1"]
        assert await queue.aget_job_state(job.id) == "completed"
        assert (got.attempts_started, got.attempts_made) == (2, 1)
        assert got.returnvalue == {"by": "ours", "i": 1, "attempt": 0}
    else:
        assert calls == [], "a job past maxStalledCount must not run again"
        assert await queue.aget_job_state(job.id) == "failed"
        assert got.failed_reason == STALL_REASON
        assert got.deferred_failure is None
        failed = [e for e in stream_events(r, queue.name) if e["event"] == "failed"]
        assert [(e["jobId"], e["prev"], e["failedReason"]) for e in failed] == [
            ("orphan-1", "active", STALL_REASON)
        ]


async def _is_active(queue: Queue, job_id: str) -> bool:
    job = await queue.aget_job(job_id)
    return (
        (await queue.aget_job_state(job_id)) == "active"
        and job is not None
        and job.processed_on is not None
    )
