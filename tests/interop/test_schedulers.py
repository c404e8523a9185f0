"""Job schedulers shared with the real BullMQ: upserted by Node / PyPI and run by our worker,
upserted by us and read and run by a Node worker, and both workers on one schedule."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import bullmq
import pytest

from django_bullq import Queue
from tests.interop.helpers import Call, Node, our_processor
from tests.support.workerkit import make_worker

pytestmark = pytest.mark.interop


def stamps(ids: list[str], scheduler_id: str) -> list[int]:
    prefix = f"repeat:{scheduler_id}:"
    assert all(i.startswith(prefix) for i in ids), ids
    return [int(i[len(prefix) :]) for i in ids]


def regular(ms: list[int], every: int) -> bool:
    """Slots aligned on ``every``; consecutive after the first run (the first one may have
    been picked up late, and then the missed slots are skipped, as BullMQ does)."""
    return all((b - a) % every == 0 for a, b in zip(ms, ms[1:], strict=False)) and all(
        b - a == every for a, b in zip(ms[1:], ms[2:], strict=False)
    )


def pending(queue: Queue, scheduler_id: str) -> list[str]:
    return [
        i
        for i in queue.get_job_ids("waiting", "delayed", "prioritized")
        if i.startswith(f"repeat:{scheduler_id}:")
    ]


async def run_ours(queue: Queue, seconds: float) -> list[Call]:
    calls: list[Call] = []
    worker = make_worker(queue, our_processor(calls), drain_delay=0.2)
    task = asyncio.create_task(worker.arun())
    await asyncio.sleep(seconds)
    worker.close()
    await asyncio.wait_for(task, 10)
    return calls


async def test_node_scheduler_runs_on_our_worker(queue: Queue, node: Node) -> None:
    report = await node.arun(
        "schedulers",
        {
            "upsert": [
                {
                    "id": "node-every",
                    "repeat": {"every": 300},
                    "template": {"name": "tick", "data": {"result": 1}, "opts": {"attempts": 2}},
                },
                {
                    "id": "node-cron",
                    "repeat": {"pattern": "* * * * * *", "tz": "Europe/Paris"},
                    "template": {"name": "cron", "data": {"result": 2}},
                },
            ]
        },
    )
    assert report["count"] == 2
    mine = queue.get_job_scheduler("node-every")
    assert mine is not None and mine.every == 300 and mine.name == "tick"
    assert mine.data == {"result": 1} and mine.opts.get("attempts") == 2
    cron = queue.get_job_scheduler("node-cron")
    assert cron is not None and cron.pattern == "* * * * * *" and cron.tz == "Europe/Paris"

    calls = await run_ours(queue, 2.2)
    every = stamps([c.id for c in calls if c.name == "tick"], "node-every")
    assert len(every) >= 5, every
    assert regular(every, 300), every
    secs = stamps([c.id for c in calls if c.name == "cron"], "node-cron")
    assert len(secs) >= 2 and all(s % 1000 == 0 for s in secs)
    assert len(set(secs)) == len(secs)
    assert len(pending(queue, "node-every")) == 1 and len(pending(queue, "node-cron")) == 1
    # Node still reads a consistent scheduler after our worker iterated it
    after = (await node.arun("schedulers", {"get": ["node-every"]}))["get"]["node-every"]
    assert after["iterationCount"] == len(every) + 1
    assert after["next"] == every[-1] + 300


async def test_our_scheduler_is_read_and_run_by_node(queue: Queue, node: Node) -> None:
    queue.upsert_job_scheduler(
        "ours-every",
        {"every": 300},
        {"name": "tick", "data": {"result": "n"}, "opts": {"attempts": 3}},
    )
    queue.upsert_job_scheduler(
        "ours-cron",
        {"pattern": "0 0 9 * * 1", "tz": "America/New_York"},
        {"name": "weekly", "data": {"x": 1}},
        limit=10,
    )
    listed = {s["key"]: s for s in (await node.arun("schedulers", {}))["list"]}
    assert set(listed) == {"ours-every", "ours-cron"}
    assert listed["ours-every"]["every"] == 300 and listed["ours-every"]["name"] == "tick"
    assert listed["ours-every"]["template"]["data"] == {"result": "n"}
    assert listed["ours-every"]["template"]["opts"]["attempts"] == 3
    assert listed["ours-every"]["iterationCount"] == 1
    cron = listed["ours-cron"]
    assert cron["pattern"] == "0 0 9 * * 1" and cron["tz"] == "America/New_York"
    assert cron["limit"] == 10 and cron["next"] == queue.get_job_scheduler("ours-cron").next_millis

    report = await node.arun("worker", {"run_ms": 2000, "opts": {"drainDelay": 1}})
    ran = stamps([c["id"] for c in report["calls"] if c["name"] == "tick"], "ours-every")
    assert len(ran) >= 4 and not report["errors"], report
    assert regular(ran, 300), ran
    assert len(pending(queue, "ours-every")) == 1
    got = queue.get_job_scheduler("ours-every")
    assert got is not None and got.iteration_count == len(ran) + 1


async def test_node_and_our_worker_share_one_schedule(queue: Queue, node: Node) -> None:
    queue.upsert_job_scheduler("shared", {"every": 200}, {"name": "tick", "data": {}})
    theirs = node.start("worker", {"run_ms": 2500, "opts": {"drainDelay": 1}})
    ours = await run_ours(queue, 2.5)
    report = await theirs.aresult()
    ids = [c.id for c in ours] + [c["id"] for c in report["calls"]]
    ran = sorted(stamps(ids, "shared"))
    assert len(ran) == len(set(ran)), "one iteration ran twice"
    assert regular(ran, 200), ran
    assert len(ran) >= 8 and ours and report["calls"]
    assert len(pending(queue, "shared")) == 1


async def test_node_removes_our_scheduler_and_we_remove_theirs(queue: Queue, node: Node) -> None:
    start = int(time.time() * 1000) + 60_000
    queue.upsert_job_scheduler("ours", {"every": 1000}, start_date=start)
    await node.arun(
        "schedulers", {"upsert": [{"id": "theirs", "repeat": {"every": 1000, "startDate": start}}]}
    )
    report = await node.arun("schedulers", {"remove": ["ours"]})
    assert report["count"] == 1 and pending(queue, "ours") == []
    assert queue.remove_job_scheduler("theirs") is True
    assert queue.get_job_schedulers_count() == 0 and queue.count() == 0


async def test_pypi_scheduler_runs_on_our_worker_and_reads_ours(
    queue: Queue, redis_url: str
) -> None:
    producer = bullmq.Queue(queue.name, {"connection": redis_url})
    try:
        await producer.upsertJobScheduler("py-every", {"every": 300}, "tick", {"result": 1})
        await queue.aupsert_job_scheduler("ours", {"every": 60_000}, {"name": "x", "data": [1]})
        listed: list[Any] = await producer.getJobSchedulers(0, -1, True)  # noqa: FBT003 - PyPI bullmq's signature
        ours = next(s for s in listed if s["key"] == "ours")
        assert ours["every"] == 60_000 and ours["template"]["data"] == [1]
        calls = await run_ours(queue, 1.5)
        ran = stamps([c.id for c in calls if c.name == "tick"], "py-every")
        assert len(ran) >= 3 and regular(ran, 300), ran
    finally:
        await producer.close()
