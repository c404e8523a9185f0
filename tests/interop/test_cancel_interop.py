"""Cancellation across libraries: a cancel message published by a Node process (plain ioredis
``PUBLISH`` on ``<prefix>:<queue>:control``) is honoured by our worker, and a ``timeout`` option
set by a Node producer is enforced by our worker."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from django_bullq import Job, Queue, Worker
from django_bullq.core.worker import WorkerOptions
from tests.interop.helpers import Node, wait_for

pytestmark = pytest.mark.interop


async def _run(queue: Queue, processor: Any, done: Any, during: Any = None) -> None:
    worker = Worker(queue, processor, WorkerOptions(drain_delay=0.5))
    task = asyncio.create_task(worker.arun())
    try:
        if during is not None:
            await during()
        await wait_for(done, 15, "the job to finish", watch=task)
    finally:
        worker.close()
        await asyncio.wait_for(task, 10)


async def test_node_cancel_message_cancels_our_running_job(queue: Queue, node: Node) -> None:
    [job_id] = node.add([{"name": "long", "data": {"i": 1}, "opts": {"attempts": 1}}])
    started = asyncio.Event()

    async def long(job: Job) -> str:
        started.set()
        await asyncio.sleep(30)
        return "never"

    async def cancel_from_node() -> None:
        await asyncio.wait_for(started.wait(), 10)
        report = await node.arun(
            "publish",
            {
                "wait_subscribers": 1,
                "messages": [{"action": "cancel", "jobId": job_id, "reason": "node says stop"}],
            },
        )
        assert report["receivers"] == [1]

    async def failed() -> bool:
        return await queue.aget_job_state(job_id) == "failed"

    await _run(queue, long, failed, cancel_from_node)
    got = await queue.aget_job(job_id, required=True)
    assert got is not None and got.failed_reason == "cancelled: node says stop"
    seen = (await node.ainspect([job_id]))["jobs"][job_id]
    assert (seen["state"], seen["failedReason"]) == ("failed", "cancelled: node says stop")


async def test_timeout_set_by_a_node_producer_is_enforced(queue: Queue, node: Node) -> None:
    [job_id] = node.add([{"name": "long", "data": {}, "opts": {"timeout": 300}}])

    async def long(job: Job) -> str:
        await asyncio.sleep(30)
        return "never"

    async def failed() -> bool:
        return await queue.aget_job_state(job_id) == "failed"

    await _run(queue, long, failed)
    got = await queue.aget_job(job_id, required=True)
    assert got is not None and got.failed_reason == "timed out after 300 ms"
