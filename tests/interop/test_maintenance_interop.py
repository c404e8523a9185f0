"""Maintenance across libraries: Node's getMetrics reads our metrics; Node's clean / obliterate /
retryJobs / job.retry / changePriority on our jobs and ours on theirs leave consistent state."""

from __future__ import annotations

import time
from typing import Any

import pytest
import redis

from django_bullq import Queue
from django_bullq.core.worker import WorkerOptions
from tests.interop.helpers import Call, Node, must_get, run_our_worker_until
from tests.support.workerkit import dead_worker_fetch

pytestmark = pytest.mark.interop

FAST = WorkerOptions(concurrency=4, drain_delay=0.2, maintenance_interval_ms=0)


def done_results(report: dict[str, Any]) -> list[Any]:
    errors = [d for d in report["done"] if "error" in d]
    assert not errors, errors
    return [d["result"] for d in report["done"]]


async def test_node_get_metrics_reads_ours(queue: Queue, node: Node, r: redis.Redis) -> None:
    now = int(time.time() * 1000)
    # a previous minute with 3 jobs, so this run closes it and writes one data point
    r.hset(
        queue.keys["metrics:completed"],
        mapping={"count": 3, "prevTS": now - now % 60_000 - 1, "prevCount": 0},
    )
    for i in range(4):
        await queue.aadd("m", {"i": i})
    await queue.aadd("m", {"fail_times": 9})
    await run_our_worker_until(
        queue,
        [],
        5,
        options=WorkerOptions(
            concurrency=1, drain_delay=0.2, maintenance_interval_ms=0, metrics_max_data_points=10
        ),
    )
    ours = queue.get_metrics("completed")
    assert ours.count == 7 and ours.data == [3] and ours.prev_count == 3
    theirs, theirs_failed = done_results(
        node.run("maint", {"do": ["metrics:completed", "metrics:failed"]})
    )
    assert theirs == {
        "meta": {"count": ours.count, "prevTS": ours.prev_ts, "prevCount": ours.prev_count},
        "data": ours.data,
        "count": ours.total_points,
    }
    assert theirs_failed["meta"]["count"] == 1 == queue.get_metrics("failed").count


async def test_node_worker_metrics_read_by_us(queue: Queue, node: Node) -> None:
    for i in range(3):
        await queue.aadd("m", {"i": i})
    done_results(node.run("maint", {"do": ["work:3:10"]}))
    assert queue.get_metrics("completed").count == 3


async def test_node_clean_on_our_jobs_and_ours_on_theirs(
    queue: Queue, node: Node, r: redis.Redis
) -> None:
    for i in range(6):
        await queue.aadd("c", {"i": i})
    await run_our_worker_until(queue, [], 6, options=FAST)
    (removed,) = done_results(node.run("maint", {"do": ["clean:0:4:completed"]}))
    assert len(removed) == 4
    left = queue.get_job_ids("completed")
    assert len(left) == 2 and not set(left) & set(removed)
    assert all(r.exists(queue.keys.job(i)) == 0 for i in removed)

    # theirs: Node adds and processes, we clean
    node.add([{"name": "n", "data": {"i": i}} for i in range(5)])
    done_results(node.run("maint", {"do": ["work:5:0"]}))
    ours = queue.clean(0)
    assert len(ours) == 7
    report = node.run("maint")
    assert report["counts"]["completed"] == 0


async def test_obliterate_across_libraries(queue: Queue, node: Node, r: redis.Redis) -> None:
    for i in range(30):
        await queue.aadd("o", {"i": i}, delay=60_000 if i % 3 == 0 else 0)
    (result,) = done_results(node.run("maint", {"do": ["obliterate::7"]}))
    assert result is None
    assert list(r.scan_iter(queue.keys.key_prefix + "*")) == []

    node.add([{"name": "n", "data": {"i": i}, "opts": {"priority": i % 2}} for i in range(20)])
    queue.obliterate(count=7)
    assert list(r.scan_iter(queue.keys.key_prefix + "*")) == []


async def test_node_obliterate_refuses_our_active_job(queue: Queue, node: Node) -> None:
    await queue.aadd("o", {})
    dead_worker_fetch(queue, lock_ms=60_000)
    report = node.run("maint", {"do": ["obliterate"]})
    assert "error" in report["done"][0]
    assert queue.get_job_counts("active")["active"] == 1


async def test_retry_jobs_across_libraries(queue: Queue, node: Node) -> None:
    for i in range(4):
        await queue.aadd("r", {"fail_times": 1, "result": i})
    await run_our_worker_until(queue, [], 4, options=FAST)
    assert queue.get_job_counts("failed")["failed"] == 4
    (moved,) = done_results(node.run("maint", {"do": ["retryJobs:failed:3"]}))
    assert moved is None
    assert queue.get_job_counts("failed", "waiting") == {"failed": 0, "waiting": 4}
    calls: list[Call] = []
    await run_our_worker_until(queue, calls, 4, options=FAST)
    assert sorted(c.attempts_made for c in calls) == [1, 1, 1, 1]
    assert queue.get_job_counts("completed")["completed"] == 4

    # theirs failed by a Node worker, retried by us, completed by Node
    ids = node.add([{"name": "n", "data": {"fail": True}} for _ in range(3)])
    done_results(node.run("maint", {"do": ["work:3:0"]}))
    assert queue.retry_jobs("failed") == 3
    for job_id in ids:
        await must_get(queue, job_id).aupdate_data({})  # Node's worker now completes it
    report = node.run("maint", {"do": ["work:3:0"]})
    assert report["counts"]["completed"] == 7 and report["counts"]["failed"] == 0


async def test_job_ops_across_libraries(queue: Queue, node: Node) -> None:
    a = await queue.aadd("j", {"v": 1})
    b = await queue.aadd("j", {"v": 2}, delay=60_000)
    report = node.run(
        "maint", {"do": [f"priority:{a.id}:3", f"delay:{b.id}:120000", f'data:{a.id}:{{"v":5}}']}
    )
    done_results(report)
    assert queue.get_job_state(a.id) == "prioritized"
    assert a.refresh().data == {"v": 5} and a.priority == 3
    assert b.refresh().delay == 120_000

    (cid,) = node.add([{"name": "n", "data": {"fail": True}}])
    done_results(node.run("maint", {"do": ["work:1:0"]}))
    theirs = await queue.aget_job(cid, required=True)
    assert theirs is not None
    await theirs.aretry("failed")
    theirs.change_priority(2)
    assert queue.get_job_state(cid) == "prioritized"


async def test_node_job_retry_on_our_failed_job(queue: Queue, node: Node) -> None:
    c = await queue.aadd("j", {"fail_times": 1}, job_id="c-ours")
    await run_our_worker_until(queue, [], 1, options=FAST)
    assert queue.get_job_state(c.id) == "failed"
    done_results(node.run("maint", {"do": [f"retry:{c.id}:failed"]}))
    assert queue.get_job_state(c.id) == "waiting"
    assert c.refresh().failed_reason is None and c.finished_on is None
    calls: list[Call] = []
    await run_our_worker_until(queue, calls, 1, options=FAST)
    assert queue.get_job_state(c.id) == "completed" and calls[0].attempts_made == 1


async def test_pypi_bullmq_maintenance_on_our_jobs(
    queue: Queue, redis_url: str, r: redis.Redis
) -> None:
    """PyPI bullmq 3.4.4's Queue.clean / retryJobs / promoteJobs / drain / obliterate and
    Job.retry / updateData / changePriority on jobs we added and ran."""
    import bullmq

    theirs = bullmq.Queue(queue.name, {"connection": redis_url})
    try:
        for i in range(4):
            await queue.aadd("p", {"fail_times": 1, "result": i})
        await run_our_worker_until(queue, [], 4, options=FAST)
        await theirs.retryJobs({"state": "failed"})
        assert queue.get_job_counts("failed", "waiting") == {"failed": 0, "waiting": 4}
        await run_our_worker_until(queue, [], 4, options=FAST)
        removed = await theirs.clean(0, 3, "completed")
        assert len(removed) == 3 and queue.get_job_counts("completed")["completed"] == 1

        late = await queue.aadd("p", {}, delay=60_000)
        await theirs.promoteJobs()
        assert queue.get_job_state(late.id) == "waiting"
        job = await bullmq.Job.fromId(theirs, late.id)
        await job.updateData({"v": 1})
        await job.changePriority({"priority": 2})
        assert late.refresh().data == {"v": 1} and queue.get_job_state(late.id) == "prioritized"

        (done_id,) = queue.get_job_ids("completed")
        await (await bullmq.Job.fromId(theirs, done_id)).retry("completed")
        assert queue.get_job_state(done_id) == "waiting"
        await theirs.drain()
        assert queue.get_job_counts("waiting", "prioritized") == {"waiting": 0, "prioritized": 0}
        await queue.aadd("p", {})
        await theirs.pause()
        await theirs.obliterate()
        # PyPI's obliterate deletes BullMQ's keys only: our workers' metrics (docs/metrics.md)
        # stay until they expire, 72 h after their minute / hour; the all-time totals (what
        # Prometheus reads) have no expiry and stay until our obliterate
        left = list(r.scan_iter(queue.keys.key_prefix + "*"))
        assert left and all(":bullq:metrics:" in k for k in left)
        totals = queue.keys["bullq:metrics:total"]
        assert totals in left and r.ttl(totals) == -1
        assert all(0 < r.ttl(k) <= 73 * 3600 for k in left if k != totals)
    finally:
        await theirs.close()


async def test_our_obliterate_on_node_data_leaves_no_key_and_frees_a_node_parent(
    queue: Queue, node: Node, r: redis.Redis, redis_url: str
) -> None:
    """Issue 12 item 3 on Node-written data: a Node throttle dedup key whose job is gone, a
    limiter key, and a Node flow whose parent (another queue) waits for a child of ours."""
    parents = f"{queue.name}-parents"
    node.add(
        [
            {
                "name": "d",
                "data": {},
                "opts": {"deduplication": {"id": "x", "ttl": 60_000}, "removeOnComplete": True},
            }
        ]
    )
    calls: list[Call] = []
    await run_our_worker_until(
        queue,
        calls,
        1,
        until_calls=True,
        options=WorkerOptions(
            drain_delay=0.2, maintenance_interval_ms=0, limiter_max=5, limiter_duration=60_000
        ),
    )
    (tree,) = (
        await node.arun(
            "flow",
            {
                "actions": [
                    {
                        "add": {
                            "name": "p",
                            "queueName": parents,
                            "data": {},
                            "children": [
                                {
                                    "name": "c",
                                    "queueName": queue.name,
                                    "data": {},
                                    "opts": {"failParentOnFailure": True},
                                }
                            ],
                        }
                    }
                ]
            },
        )
    )["results"]
    assert r.exists(queue.keys.de("x"), queue.keys["limiter"]) == 2

    await queue.aobliterate()

    assert list(r.scan_iter(queue.keys.key_prefix + "*")) == []
    (read,) = (
        await node.arun(
            "flow", {"actions": [{"getFlow": {"queueName": parents, "id": tree["tree"]["id"]}}]}
        )
    )["results"]
    assert read["flow"]["state"] == "waiting"
