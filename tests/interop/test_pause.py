"""Pause / resume across libraries (BullMQ v6 semantics: ``meta.paused``, jobs stay in wait)."""

from __future__ import annotations

import asyncio
import time

import pytest
import redis

from django_bullq import Queue
from django_bullq.core.worker import WorkerOptions
from tests.interop.helpers import Call, Node, run_our_worker_until, stream_events

pytestmark = pytest.mark.interop


async def test_node_sees_our_pause_and_takes_no_job_until_we_resume(
    queue: Queue, node: Node, r: redis.Redis
) -> None:
    await queue.apause()
    assert (await node.ainspect())["paused"] is True
    for i in range(3):
        await queue.aadd("p", {"i": i})
    assert r.exists(f"bull:{queue.name}:marker") == 0, "no wake-up marker while paused"

    worker = node.start(
        "worker",
        {"opts": {"concurrency": 3, "drainDelay": 5}, "until_finished": 3, "timeout_ms": 12000},
    )
    worker.wait_ready()
    await asyncio.sleep(1.0)  # a window in which a Node worker that ignored the pause would run
    assert await queue.aget_job_counts("waiting", "active", "completed") == {
        "waiting": 3,
        "active": 0,
        "completed": 0,
    }
    resumed_at = int(time.time() * 1000)
    await queue.aresume()
    report = await worker.aresult(15)
    assert not report["timedOut"]
    assert sorted(c["data"]["i"] for c in report["calls"]) == [0, 1, 2]
    assert all(c["t"] >= resumed_at for c in report["calls"])
    assert (await node.ainspect())["paused"] is False
    events = [e["event"] for e in stream_events(r, queue.name)]
    assert events.count("paused") == 1 and events.count("resumed") == 1


async def test_we_see_node_pause_and_take_no_job_until_node_resumes(
    queue: Queue, node: Node
) -> None:
    await node.ainspect(do=["pause"])
    assert await queue.ais_paused()
    for i in range(3):
        await queue.aadd("p", {"i": i})
    calls: list[Call] = []

    async def while_paused_then_node_resumes() -> None:
        await asyncio.sleep(1.0)  # a window in which a worker that ignored the pause would run
        assert calls == []
        assert (await queue.aget_job_counts("waiting"))["waiting"] == 3
        await node.ainspect(do=["resume"])
        assert not await queue.ais_paused()

    # the same worker, blocked on the marker while paused, wakes up on Node's resume
    await run_our_worker_until(
        queue,
        calls,
        3,
        during=while_paused_then_node_resumes,
        options=WorkerOptions(concurrency=3, drain_delay=5.0),
    )
    assert sorted(c.data["i"] for c in calls) == [0, 1, 2]
