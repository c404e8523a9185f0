"""Deduplication through the Queue API against Redis (protocol §5.14), and case B19."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import redis

from django_bullq import Job, JobOptions, Queue
from django_bullq.core.options import normalize_deduplication
from tests.support.workerkit import events, make_worker, run_until


def test_option_is_stored_as_de_with_bullmq_keys(queue: Queue, r: redis.Redis) -> None:
    job = queue.add(
        "d",
        {},
        deduplication={
            "id": "k",
            "ttl": 5000,
            "extend": True,
            "replace": False,
            "keep_last_if_active": True,
        },
    )
    assert job.opts["de"] == {"id": "k", "ttl": 5000, "extend": True, "keepLastIfActive": True}
    stored = queue.get_job(job.id, required=True)
    assert stored is not None and stored.deduplication_id == "k"
    assert stored.opts["de"]["keepLastIfActive"] is True
    assert normalize_deduplication({"id": "k", "keepLastIfActive": False}) == {"id": "k"}


@pytest.mark.parametrize(
    "bad",
    [
        "k",
        {},
        {"id": ""},
        {"id": 7},
        {"id": "k", "ttl": 0},
        {"id": "k", "ttl": 1.5},
        {"id": "k", "extend": "yes"},
        {"id": "k", "debounce": True},
    ],
)
def test_invalid_deduplication_is_refused_before_redis(queue: Queue, bad: Any) -> None:
    with pytest.raises(ValueError):
        queue.add("d", {}, deduplication=bad)
    assert queue.client.exists(queue.keys["id"]) == 0


def test_simple_mode_returns_the_owner_and_emits_deduplicated(queue: Queue, r: redis.Redis) -> None:
    first = queue.add("d", {"v": 1}, deduplication={"id": "order-7"})
    second = queue.add("d", {"v": 2}, deduplication={"id": "order-7"})
    assert second.id == first.id
    assert queue.get_deduplication_job_id("order-7") == first.id
    assert queue.count() == 1
    assert events(r, queue, "deduplicated") == [
        {
            "event": "deduplicated",
            "jobId": first.id,
            "deduplicationId": "order-7",
            "deduplicatedJobId": "2",
        }
    ]
    assert queue.remove_deduplication_key("order-7") == 1
    assert queue.get_deduplication_job_id("order-7") is None
    assert queue.add("d", {}, deduplication={"id": "order-7"}).id == "3"


async def test_async_twins_and_release_when_the_owner_ends(queue: Queue) -> None:
    job = await queue.aadd("d", {}, deduplication={"id": "a"})
    assert await queue.aget_deduplication_job_id("a") == job.id
    await run_until(
        make_worker(queue, lambda j: None),
        lambda: queue.get_job_counts("completed")["completed"] == 1,
    )
    assert await queue.aget_deduplication_job_id("a") is None
    again = await queue.aadd("d", {}, deduplication={"id": "a"})
    assert again.id != job.id
    assert await queue.aremove_deduplication_key("a") == 1


def test_throttle_mode_outlives_the_job_until_its_ttl(queue: Queue) -> None:
    job = queue.add("d", {}, deduplication={"id": "t", "ttl": 60_000})
    queue.client.delete(queue.keys.job(job.id))  # even gone, a TTL key still throttles
    assert queue.add("d", {}, deduplication={"id": "t", "ttl": 60_000}).id == job.id


@pytest.mark.parametrize(
    "retention", [{"remove_on_complete": True}, {"remove_on_complete": 0}, {"remove_on_fail": True}]
)
async def test_throttle_outlives_an_owner_removed_by_retention(
    queue: Queue, retention: dict[str, Any]
) -> None:
    """Issue 12 item 4: remove_on_complete / remove_on_fail delete the hash, not the throttle."""
    throttle = {"id": "x", "ttl": 60_000}
    first = await queue.aadd("d", {}, deduplication=throttle, **retention)

    def boom(job: Job) -> None:
        raise RuntimeError("boom")

    processor = boom if "remove_on_fail" in retention else (lambda j: None)
    await run_until(
        make_worker(queue, processor), lambda: queue.client.exists(queue.keys.job(first.id)) == 0
    )
    assert await queue.aget_deduplication_job_id("x") == first.id
    second = await queue.aadd("d", {}, deduplication=throttle, **retention)
    assert second.id == first.id
    assert queue.get_job_counts("waiting", "completed", "failed") == {
        "waiting": 0,
        "completed": 0,
        "failed": 0,
    }


def test_clean_of_finished_owner_keeps_the_throttle_remove_frees_it(queue: Queue) -> None:
    throttle = {"id": "x", "ttl": 60_000}
    first = queue.add("d", {}, deduplication=throttle)
    queue.client.hset(queue.keys.job(first.id), "finishedOn", 1)
    queue.client.lrem(queue.keys["wait"], 0, first.id)
    queue.client.zadd(queue.keys["completed"], {first.id: 1})
    assert queue.clean(0, state="completed") == [first.id]
    assert queue.add("d", {}, deduplication=throttle).id == first.id
    second = queue.add("d", {}, deduplication={"id": "y", "ttl": 60_000})
    queue.remove(second.id)  # an explicit remove frees the id at once (BullMQ)
    assert queue.get_deduplication_job_id("y") is None


def test_replace_keeps_only_the_last_delayed_job(queue: Queue, r: redis.Redis) -> None:
    opts = JobOptions(
        delay=10_000, deduplication={"id": "debounce", "ttl": 10_000, "replace": True}
    )
    ids = [queue.add("d", {"v": v}, opts).id for v in range(3)]
    assert ids == ["1", "2", "3"]
    assert queue.get_job_ids("delayed") == ["3"]
    survivor = queue.get_job("3", required=True)
    assert survivor is not None and survivor.data == {"v": 2}
    assert [e["prev"] for e in events(r, queue, "removed")] == ["delayed", "delayed"]


async def test_keep_last_if_active_runs_the_last_add_after_the_active_one(queue: Queue) -> None:
    started = asyncio.Event()
    release = asyncio.Event()
    seen: list[Any] = []

    async def process(job: Job) -> None:
        seen.append(job.data["v"])
        if job.data["v"] == 1:
            started.set()
            await release.wait()

    dedup = {"id": "sync-user-9", "keep_last_if_active": True}
    queue.add("sync", {"v": 1}, deduplication=dedup)
    worker = make_worker(queue, process)
    task = asyncio.create_task(worker.arun())
    try:
        await asyncio.wait_for(started.wait(), 5)
        for v in (2, 3, 4):
            assert queue.add("sync", {"v": v}, deduplication=dedup).id == "1"
        assert queue.count() == 0
        release.set()
        for _ in range(250):
            if queue.get_job_counts("completed")["completed"] == 2:
                break
            await asyncio.sleep(0.02)
    finally:
        worker.close()
        await asyncio.wait_for(task, 10)
    assert seen == [1, 4]
    last = queue.get_job("4", required=True)
    assert last is not None and last.deduplication_id == "sync-user-9"
    assert queue.get_deduplication_job_id("sync-user-9") is None


async def test_case_b19_orphaned_dedup_key_does_not_swallow_later_jobs(
    queue: Queue, r: redis.Redis
) -> None:
    first = queue.add("mail", {}, deduplication={"id": "a@x"})
    # the job vanishes out of band (an outage, a manual cleanup): only its hash and list entry
    queue.client.delete(queue.keys.job(first.id))
    queue.client.lrem(queue.keys["wait"], 0, first.id)
    before = len(events(r, queue, "deduplicated"))

    second = queue.add("mail", {"n": 2}, deduplication={"id": "a@x"})

    assert second.id != first.id
    assert queue.get_deduplication_job_id("a@x") == second.id
    assert len(events(r, queue, "deduplicated")) == before
    await run_until(
        make_worker(queue, lambda j: "sent"),
        lambda: queue.get_job_counts("completed")["completed"] == 1,
    )
    assert second.wait(timeout=5) == "sent"
    assert queue.get_deduplication_job_id("a@x") is None  # released with its job
