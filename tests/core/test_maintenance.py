"""Queue / Job maintenance against Redis: promote, retry, clean, drain, obliterate, change a job,
metrics written by our worker and read back as a series (core/calls/operations.py)."""

from __future__ import annotations

from typing import Any

import pytest

from django_bullq import FlowProducer, Job, Queue
from django_bullq.core.calls import queue_builders
from django_bullq.core.calls.operations import Metrics
from django_bullq.core.errors import (
    ActiveJobsError,
    JobNotFound,
    JobNotInState,
    QueueNotPaused,
    ScriptError,
)
from tests.support.workerkit import dead_worker_fetch, events, make_worker, run_until


def add_many(queue: Queue, n: int, **opts: Any) -> list[str]:
    return [j.id for j in queue.add_bulk([("t", {"i": i}, opts) for i in range(n)])]


def test_promote_jobs_in_batches(queue: Queue) -> None:
    add_many(queue, 25, delay=60_000)
    assert queue.promote_jobs(count=10) == 25
    assert queue.get_job_counts("delayed", "waiting") == {"delayed": 0, "waiting": 25}


async def test_apromote_jobs(queue: Queue) -> None:
    await queue.aadd("t", {}, delay=60_000)
    assert await queue.apromote_jobs() == 1


async def test_retry_jobs_failed_and_completed(queue: Queue) -> None:
    add_many(queue, 12, attempts=1)

    async def fail(job: Any) -> None:
        raise ValueError("no")

    await run_until(
        make_worker(queue, fail), lambda: queue.get_job_counts("failed")["failed"] == 12
    )
    assert queue.retry_jobs("failed", count=5) == 12
    assert queue.get_job_counts("failed", "waiting") == {"failed": 0, "waiting": 12}
    job = queue.get_job(queue.get_job_ids("waiting")[0], required=True)
    assert job is not None and job.failed_reason is None and job.finished_on is None
    assert job.attempts_made == 1

    async def ok(job: Any) -> str:
        return "ok"

    await run_until(
        make_worker(queue, ok), lambda: queue.get_job_counts("completed")["completed"] == 12
    )
    assert await queue.aretry_jobs("completed", timestamp=0) == 0  # nothing finished at 0 ms
    assert await queue.aretry_jobs("completed") == 12
    with pytest.raises(ValueError):
        queue.retry_jobs("active")


async def test_job_retry_and_errors(queue: Queue, r: Any) -> None:
    job = queue.add("t", {}, attempts=1)

    async def fail(j: Any) -> None:
        raise ValueError("boom")

    await run_until(make_worker(queue, fail), lambda: job.get_state() == "failed")
    with pytest.raises(JobNotInState):
        job.retry("completed")
    job.retry("failed", reset_attempts_made=True, reset_attempts_started=True)
    job.refresh()
    assert job.get_state() == "waiting" and job.attempts_made == 0 and job.attempts_started == 0
    with pytest.raises(JobNotInState):
        await job.aretry()
    ghost = queue.add("t", {})
    queue.remove(ghost.id)
    with pytest.raises(JobNotFound):
        ghost.retry()
    assert {"event": "waiting", "jobId": job.id, "prev": "failed"} in events(r, queue, "waiting")


def test_clean_in_batches_with_limit(queue: Queue, r: Any) -> None:
    for i in range(25_000 // 1000):
        pipe = r.pipeline(transaction=False)
        for j in range(1000):
            job_id = f"c{i}x{j}"
            pipe.hset(
                queue.keys.job(job_id), mapping={"name": "t", "data": "{}", "finishedOn": 1000}
            )
            pipe.zadd(queue.keys["completed"], {job_id: 1000})
        pipe.execute()
    removed = queue.clean(0, limit=12_000)
    assert len(removed) == 12_000 and len(set(removed)) == 12_000
    removed = queue.clean(0)
    assert len(removed) == 13_000
    assert queue.get_job_counts("completed")["completed"] == 0
    counts = [int(e["count"]) for e in events(r, queue, "cleaned")]
    assert counts == [10_000, 2_000, 10_000, 3_000]


async def test_clean_by_state_and_grace(queue: Queue) -> None:
    old = queue.add("t", {}, timestamp=1000)
    young = queue.add("t", {})
    assert await queue.aclean(60_000, state="waiting") == [old.id]
    assert queue.get_job_ids("waiting") == [young.id]
    with pytest.raises(ValueError):
        queue.clean(0, state="waiting-children")


def test_drain(queue: Queue) -> None:
    add_many(queue, 3)
    add_many(queue, 2, delay=60_000)
    add_many(queue, 2, priority=4)
    assert queue.drain() == 5
    assert queue.get_job_counts("waiting", "prioritized", "delayed") == {
        "waiting": 0,
        "prioritized": 0,
        "delayed": 2,
    }
    assert queue.drain(delayed=True) == 2


async def test_adrain(queue: Queue) -> None:
    await queue.aadd("t", {})
    assert await queue.adrain() == 1


def test_obliterate_refuses_active_jobs_unless_forced(queue: Queue, r: Any) -> None:
    add_many(queue, 2_500)
    dead_worker_fetch(queue, lock_ms=60_000)
    with pytest.raises(ActiveJobsError):
        queue.obliterate()
    assert queue.is_paused()  # paused first, as BullMQ
    assert queue.get_job_counts("active", "waiting") == {"active": 1, "waiting": 2_499}
    queue.obliterate(force=True, count=500)
    assert list(r.scan_iter(queue.keys.key_prefix + "*")) == []


def test_obliterate_codes_come_from_the_code_table(queue: Queue) -> None:
    """obliterate-2's own -1 and -2 (not JobNotFound / LockMissing) are raised by the call."""
    queue.add("t", {})
    dead_worker_fetch(queue, lock_ms=60_000)
    call = queue_builders.obliterate(queue.keys, count=10, force=False, cursor="0")
    with pytest.raises(QueueNotPaused) as not_paused:
        queue._run(call)  # the queue is running: obliterate pauses it first
    assert isinstance(not_paused.value, ScriptError) and not_paused.value.code == -1
    queue.pause()
    with pytest.raises(ActiveJobsError, match="pass force=True") as active:
        queue._run(call)
    assert active.value.code == -2 and active.value.script == "obliterate"


async def test_aobliterate(queue: Queue, r: Any) -> None:
    await queue.aadd("t", {})
    await queue.aobliterate()
    assert list(r.scan_iter(queue.keys.key_prefix + "*")) == []


async def test_obliterate_leaves_no_key_of_any_kind(queue: Queue, r: Any, redis_url: str) -> None:
    """Issue 12 item 3: every key kind real use creates is gone, and a parent in another queue
    waiting for a child of this queue is released (as ``Job.remove`` of the child does)."""
    other = Queue(queue.name + "-parents", redis_url)
    flows = FlowProducer(redis_url)
    try:
        tree = flows.add(
            {
                "name": "p",
                "queue_name": other.name,
                "children": [
                    {
                        "name": "c",
                        "queue_name": queue.name,
                        "data": {"step": 1},
                        "opts": {"fail_parent_on_failure": True, "delay": 60_000},
                    }
                ],
            }
        )
        queue.upsert_job_scheduler("sched", {"every": 60_000}, {"name": "tick"})
        first = queue.add(
            "t", {}, deduplication={"id": "x", "ttl": 60_000}, remove_on_complete=True
        )
        add_many(queue, 3)

        async def work(job: Job) -> None:
            await job.alog("a line")

        # the stalled check runs at start; its stalled-check key then lives 30 s (PX)
        worker = make_worker(
            queue,
            work,
            limiter_max=2,
            limiter_duration=60_000,
            metrics_max_data_points=5,
            stalled_interval=30_000,
        )
        await run_until(worker, lambda: queue.get_job_counts("completed")["completed"] >= 1)
        assert queue.get_deduplication_job_id("x") == first.id
        left = {
            k.removeprefix(queue.keys.key_prefix) for k in r.scan_iter(queue.keys.key_prefix + "*")
        }
        for kind in (
            "limiter",
            "de:x",
            "meta",
            "events",
            "metrics:completed",
            "marker",
            "stalled-check",
            "repeat",
            "repeat:sched",
            "id",
            "completed",
            "wait",
            "delayed",
        ):
            assert kind in left, (kind, sorted(left))
        assert any(k.endswith(":logs") for k in left)
        assert other.get_job_counts("waiting-children") == {"waiting-children": 1}

        await queue.aobliterate(force=True, count=2)

        assert list(r.scan_iter(queue.keys.key_prefix + "*")) == []
        assert other.get_job_ids("waiting") == [tree.job.id]
        assert r.exists(other.keys.job(tree.job.id)) == 1
    finally:
        flows.close()
        other.close()


async def test_change_priority_delay_and_data(queue: Queue) -> None:
    a = queue.add("t", {"v": 1})
    b = queue.add("t", {"v": 2})
    b.change_priority(1)
    assert queue.get_job_state(b.id) == "prioritized" and b.priority == 1
    await b.achange_priority(0)
    assert queue.get_job_state(b.id) == "waiting"
    with pytest.raises(ValueError):
        a.change_priority(-1)

    d = queue.add("t", {}, delay=60_000)
    d.change_delay(120_000)
    assert d.refresh().delay == 120_000
    await d.achange_delay(0)
    with pytest.raises(JobNotInState):
        a.change_delay(10)

    a.update_data({"v": 9})
    assert a.refresh().data == {"v": 9}
    await a.aupdate_data([1, 2])
    assert a.refresh().data == [1, 2]


async def test_worker_writes_metrics_read_as_series(queue: Queue) -> None:
    add_many(queue, 5)
    queue.add_bulk([("t", {"fail": True}), ("t", {"fail": True})])

    async def proc(job: Any) -> str:
        if job.data.get("fail"):
            raise ValueError("x")
        return "ok"

    await run_until(
        make_worker(queue, proc, metrics_max_data_points=60),
        lambda: sum(queue.get_job_counts("completed", "failed").values()) == 7,
    )
    done = queue.get_metrics("completed")
    assert isinstance(done, Metrics)
    assert done.count == 5 and done.prev_ts > 0 and done.prev_count == 0
    assert done.data == [] or done.data[0] >= 0  # a minute boundary may fall inside the run
    failed = await queue.aget_metrics("failed")
    assert failed.count == 2
    with pytest.raises(ValueError):
        queue.get_metrics("active")


async def test_no_metrics_without_the_option(queue: Queue, r: Any) -> None:
    add_many(queue, 2)

    async def proc(job: Any) -> str:
        return "ok"

    await run_until(
        make_worker(queue, proc), lambda: queue.get_job_counts("completed")["completed"] == 2
    )
    assert r.exists(queue.keys["metrics:completed"]) == 0
    assert queue.get_metrics("completed") == Metrics(0, 0, 0, [], 0)


@pytest.mark.django_layer
def test_metrics_setting_reaches_worker_options() -> None:
    from django.test import override_settings

    from django_bullq import conf

    with override_settings(BULLQ={"WORKER": {"METRICS_MAX_DATA_POINTS": 1440}}):
        assert conf.worker_options().metrics_max_data_points == 1440
