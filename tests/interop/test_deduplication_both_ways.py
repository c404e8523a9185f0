"""Deduplication ids set by Node bullmq 6.x (or PyPI bullmq) are honoured by us, and ours by
them: simple mode, throttle, replace, and keepLastIfActive across a finish by the other side."""

from __future__ import annotations

import asyncio

import bullmq
import pytest
import redis

from django_bullq import Job, Queue, Worker
from django_bullq.core.worker import WorkerOptions
from tests.interop.helpers import (
    Call,
    Node,
    must_get,
    run_our_worker_until,
    stream_events,
    wait_for,
)

pytestmark = pytest.mark.interop


def _dedup_events(r: redis.Redis, queue: Queue) -> list[dict[str, str]]:
    return [e for e in stream_events(r, queue.name) if e["event"] == "deduplicated"]


async def test_node_dedup_id_absorbs_our_add(queue: Queue, node: Node, r: redis.Redis) -> None:
    (node_id,) = await asyncio.to_thread(
        node.add, [{"name": "d", "data": {"i": 1}, "opts": {"deduplication": {"id": "n1"}}}]
    )
    ours = await queue.aadd("d", {"i": 2}, deduplication={"id": "n1"})
    assert ours.id == node_id
    assert await queue.aget_deduplication_job_id("n1") == node_id
    assert _dedup_events(r, queue)[-1]["jobId"] == node_id
    assert (await queue.aget_job_counts("waiting"))["waiting"] == 1
    assert must_get(queue, node_id).deduplication_id == "n1"
    calls: list[Call] = []
    await run_our_worker_until(queue, calls, 1)
    assert (await queue.aadd("d", {"i": 3}, deduplication={"id": "n1"})).id != node_id


async def test_our_dedup_ids_absorb_node_adds(queue: Queue, node: Node, r: redis.Redis) -> None:
    simple = await queue.aadd("d", {"i": 1}, deduplication={"id": "s"})
    throttled = await queue.aadd("d", {"i": 2}, deduplication={"id": "t", "ttl": 60_000})
    ids = await asyncio.to_thread(
        node.add,
        [
            {"name": "d", "data": {"i": 3}, "opts": {"deduplication": {"id": "s"}}},
            {"name": "d", "data": {"i": 4}, "opts": {"deduplication": {"id": "t", "ttl": 60_000}}},
        ],
    )
    assert ids == [simple.id, throttled.id]
    assert [e["deduplicationId"] for e in _dedup_events(r, queue)] == ["s", "t"]
    assert (await queue.aget_job_counts("waiting"))["waiting"] == 2


async def test_replace_across_sides_keeps_the_last_delayed_job(queue: Queue, node: Node) -> None:
    de = {"id": "deb", "ttl": 30_000, "replace": True}
    first = await queue.aadd("d", {"v": "ours"}, delay=30_000, deduplication=de)
    (node_id,) = await asyncio.to_thread(
        node.add,
        [{"name": "d", "data": {"v": "node"}, "opts": {"delay": 30_000, "deduplication": de}}],
    )
    assert node_id != first.id
    assert await queue.aget_job(first.id) is None
    assert await queue.aget_job_ids("delayed") == [node_id]
    last = await queue.aadd("d", {"v": "ours-again"}, delay=30_000, deduplication=de)
    assert await queue.aget_job_ids("delayed") == [last.id]
    assert await queue.aget_deduplication_job_id("deb") == last.id


async def test_node_worker_requeues_our_parked_keep_last_job(queue: Queue, node: Node) -> None:
    de = {"id": "kl", "keep_last_if_active": True}
    owner = await queue.aadd("d", {"i": 1, "sleep_ms": 600}, deduplication=de)
    theirs = node.start(
        "worker", {"opts": {"drainDelay": 1}, "until_finished": 2, "timeout_ms": 10000}
    )

    async def owner_active() -> bool:
        return await queue.aget_job_state(owner.id) == "active"

    await wait_for(owner_active, 8, "the Node worker took the owner")
    for i in (2, 3):
        assert (await queue.aadd("d", {"i": i}, deduplication=de)).id == owner.id
    report = await theirs.aresult(15)
    assert not report["timedOut"]
    assert [c["data"]["i"] for c in report["calls"]] == [1, 3]
    requeued = must_get(queue, str(report["calls"][1]["id"]))
    assert requeued.deduplication_id == "kl" and requeued.opts["de"]["keepLastIfActive"] is True


async def test_our_worker_requeues_a_node_parked_keep_last_job(queue: Queue, node: Node) -> None:
    de = {"id": "kl", "keepLastIfActive": True}
    started = asyncio.Event()
    release = asyncio.Event()
    seen: list[Job] = []

    async def process(job: Job) -> None:
        seen.append(job)
        if len(seen) == 1:
            started.set()
            await release.wait()

    (owner_id,) = await asyncio.to_thread(
        node.add, [{"name": "d", "data": {"i": 1}, "opts": {"deduplication": de}}]
    )
    worker = Worker(queue, process, WorkerOptions(drain_delay=1.0))
    task = asyncio.create_task(worker.arun())
    try:
        await asyncio.wait_for(started.wait(), 5)
        ids = await asyncio.to_thread(
            node.add,
            [{"name": "d", "data": {"i": i}, "opts": {"deduplication": de}} for i in (2, 3)],
        )
        assert ids == [owner_id, owner_id]
        release.set()

        async def two_done() -> bool:
            return (await queue.aget_job_counts("completed"))["completed"] == 2

        await wait_for(two_done, 8, "the parked job ran", watch=task)
    finally:
        worker.close()
        await asyncio.wait_for(task, 10)
    assert [j.data["i"] for j in seen] == [1, 3]
    assert seen[1].deduplication_id == "kl"
    report = await node.ainspect(job_ids=[seen[1].id])
    assert report["jobs"][seen[1].id]["state"] == "completed"


async def test_pypi_dedup_ids_and_ours_are_one_namespace(queue: Queue, redis_url: str) -> None:
    pypi = bullmq.Queue(queue.name, {"connection": redis_url})
    try:
        theirs = await pypi.add("d", {"i": 1}, {"deduplication": {"id": "p"}})
        assert (await queue.aadd("d", {"i": 2}, deduplication={"id": "p"})).id == theirs.id
        ours = await queue.aadd("d", {"i": 3}, deduplication={"id": "q"})
        again = await pypi.add("d", {"i": 4}, {"deduplication": {"id": "q"}})
        assert again.id == ours.id
        assert await pypi.getDeduplicationJobId("q") == ours.id
    finally:
        await pypi.close()


async def test_node_reschedule_moves_our_delayed_owner(queue: Queue, node: Node) -> None:
    de = {"id": "rs", "reschedule": True}
    owner = await queue.aadd("d", {"i": 1}, delay=60_000, deduplication=de)
    (node_id,) = await asyncio.to_thread(
        node.add, [{"name": "d", "data": {"i": 2}, "opts": {"delay": 300_000, "deduplication": de}}]
    )
    assert node_id == owner.id
    moved = must_get(queue, owner.id)
    assert moved.delay == 300_000
    due = queue.client.zscore(queue.keys["delayed"], owner.id) // 4096
    assert 300_000 - 5_000 < due - owner.timestamp <= 300_000 + 5_000


async def test_node_queue_events_read_our_deduplicated_event(queue: Queue, node: Node) -> None:
    first = await queue.aadd("d", {}, deduplication={"id": "ev"})
    await queue.aadd("d", {}, deduplication={"id": "ev"})
    report = await node.arun("events", {"last_event_id": "0", "timeout_ms": 800})
    dedup = [e["args"] for e in report["events"] if e["event"] == "deduplicated"]
    assert dedup == [{"jobId": first.id, "deduplicationId": "ev", "deduplicatedJobId": "2"}]
