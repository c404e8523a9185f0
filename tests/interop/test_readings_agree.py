"""(c) Our counts and Job readings agree with the real Node BullMQ's on the same queue."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from django_bullq import Job, Queue, Worker
from django_bullq.core.worker import WorkerOptions
from tests.interop.helpers import Call, Node, must_get, run_our_worker_until, wait_for

pytestmark = pytest.mark.interop


def assert_same_job(ours: Job, theirs: dict[str, Any], state: str) -> None:
    """Field by field: our ``Job`` against Node's ``Job`` (see node/common.mjs describeJob)."""
    assert theirs is not None, f"Node cannot see job {ours.id}"
    pairs = {
        "id": (ours.id, str(theirs["id"])),
        "name": (ours.name, theirs["name"]),
        "data": (ours.data, theirs["data"]),
        "opts": (ours.opts, theirs["opts"]),
        "attemptsMade": (ours.attempts_made, theirs["attemptsMade"]),
        "attemptsStarted": (ours.attempts_started, theirs["attemptsStarted"]),
        "stalledCounter": (ours.stalled_counter, theirs["stalledCounter"]),
        "returnvalue": (ours.returnvalue, theirs["returnvalue"]),
        "failedReason": (ours.failed_reason, theirs["failedReason"]),
        "stacktrace": (ours.stacktrace, theirs["stacktrace"]),
        "timestamp": (ours.timestamp, theirs["timestamp"]),
        "processedOn": (ours.processed_on, theirs["processedOn"]),
        "finishedOn": (ours.finished_on, theirs["finishedOn"]),
        "progress": (ours.progress, theirs["progress"]),
        "delay": (ours.delay, theirs["delay"]),
        "priority": (ours.priority, theirs["priority"]),
        "processedBy": (ours.processed_by, theirs["processedBy"]),
        "state": (state, theirs["state"]),
    }
    differ = {k: v for k, v in pairs.items() if v[0] != v[1]}
    assert not differ, f"job {ours.id}: (ours, Node) differ: {differ}"


async def test_counts_and_jobs_agree_on_jobs_we_run(queue: Queue, node: Node) -> None:
    done = await queue.aadd(
        "done",
        {"i": 1, "progress": {"pct": 50, "step": "a/b"}, "result": {"rows": 3}},
        job_id="done-1",
        remove_on_fail=5,
    )
    done2 = await queue.aadd("done", {"i": 2, "result": None}, remove_on_complete={"age": 3600})
    bad = await queue.aadd("bad", {"i": 3, "fail_times": 5}, attempts=2, backoff=0)
    calls: list[Call] = []
    await run_our_worker_until(queue, calls, 3)
    await must_get(queue, done.id).alog("a log line")

    # one job held active by our worker while the others wait in every other state
    release = asyncio.Event()

    async def hold(job: Job) -> str:
        await job.aupdate_progress(7)
        await release.wait()
        return "released"

    held = await queue.aadd("held", {"i": 4})
    worker = Worker(queue, hold, WorkerOptions(concurrency=1, drain_delay=1.0, name="ours-w"))
    task = asyncio.create_task(worker.arun())
    try:
        await wait_for(
            lambda: _progress_is(queue, held.id, 7), 10, "the held job to start", watch=task
        )
        waiting = [
            await queue.aadd("waiting", {"i": 5}, lifo=True),
            await queue.aadd("waiting", {"i": 6}),
            await queue.aadd("waiting", {"i": 7}, lifo=True),
            await queue.aadd("waiting", {"i": 8}),
        ]
        prio = [
            await queue.aadd("prio", [1, 2], priority=3),
            await queue.aadd("prio", [3], priority=1),
            await queue.aadd("prio", [4], priority=3),
        ]
        delayed = [
            await queue.aadd(
                "delayed",
                "text",
                delay=60_000,
                attempts=4,
                backoff={"type": "exponential", "delay": 10, "jitter": 0.5},
            ),
            await queue.aadd("delayed", 5, delay=30_000),
        ]
        ids = [j.id for j in (done, done2, bad, held, *waiting, *prio, *delayed)]
        states = ["waiting", "prioritized", "delayed", "active", "completed", "failed"]
        report = await node.ainspect(ids, logs=True, ranges=states, workers=True)
        ours_counts = await queue.aget_job_counts()
        assert (
            report["counts"]
            == ours_counts
            == {
                "active": 1,
                "completed": 2,
                "delayed": 2,
                "failed": 1,
                "prioritized": 3,
                "waiting": 4,
                "waiting-children": 0,
            }
        )
        for job_id in ids:
            ours = await queue.aget_job(job_id, required=True)
            assert ours is not None
            assert_same_job(ours, report["jobs"][job_id], await queue.aget_job_state(job_id))
        for state in states:
            assert report["ranges"][state] == {
                "desc": await queue.aget_job_ids(state),
                "asc": await queue.aget_job_ids(state, asc=True),
            }, state
        assert report["ranges"]["waiting"]["asc"] == [
            waiting[2].id,
            waiting[0].id,
            waiting[1].id,
            waiting[3].id,
        ]
        assert report["ranges"]["prioritized"]["asc"] == [prio[1].id, prio[0].id, prio[2].id]
        assert worker.client_name in report["workers"], "Node getWorkers() lists our worker"
        jobs = report["jobs"]
        assert jobs[done.id]["progress"] == {"pct": 50, "step": "a/b"}
        assert jobs[done.id]["returnvalue"] == {"rows": 3}
        assert jobs[done2.id]["returnvalue"] is None and jobs[done2.id]["state"] == "completed"
        assert jobs[bad.id]["failedReason"] == "fail 1" and jobs[bad.id]["attemptsMade"] == 2
        assert jobs[held.id]["state"] == "active" and jobs[held.id]["processedBy"] == "ours-w"
        assert jobs[delayed[0].id]["opts"]["backoff"] == {
            "type": "exponential",
            "delay": 10,
            "jitter": 0.5,
        }
        assert report["logs"][done.id] == ["a log line"]
    finally:
        release.set()
        worker.close()
        await asyncio.wait_for(task, 10)


async def _progress_is(q: Queue, job_id: str, value: Any) -> bool:
    job = await q.aget_job(job_id)
    return job is not None and job.progress == value


async def test_our_readings_of_jobs_node_ran(queue: Queue, node: Node) -> None:
    ids = await node.arun(
        "add",
        {
            "jobs": [
                {"name": "n-done", "data": {"i": 1, "progress": 42}, "opts": {"removeOnFail": 3}},
                {
                    "name": "n-bad",
                    "data": {"i": 2, "fail_times": 9},
                    "opts": {"attempts": 2, "backoff": 5},
                },
            ]
        },
    )
    done_id, bad_id = (str(i) for i in ids["ids"])
    # stop once both are finished; the waiting job is added after, so that a loaded machine
    # (the retry's 5 ms backoff not yet over) cannot let the worker take it instead
    await node.arun(
        "worker",
        {"opts": {"concurrency": 1, "name": "node-w"}, "until_finished": 2, "timeout_ms": 10000},
    )
    waiting = await node.arun(
        "add", {"jobs": [{"name": "n-wait", "data": {"i": 3}, "opts": {"lifo": True}}]}
    )
    wait_id = str(waiting["ids"][0])
    report = await node.ainspect([done_id, bad_id, wait_id])
    assert report["counts"] == await queue.aget_job_counts()
    for job_id in (done_id, bad_id, wait_id):
        ours = await queue.aget_job(job_id, required=True)
        assert ours is not None
        assert_same_job(ours, report["jobs"][job_id], await queue.aget_job_state(job_id))
    done = await queue.aget_job(done_id, required=True)
    assert done is not None
    assert (done.progress, done.returnvalue, done.processed_by) == (
        42,
        {"by": "node", "i": 1, "attempt": 0},
        "node-w",
    )
    bad = await queue.aget_job(bad_id, required=True)
    assert bad is not None
    assert (bad.failed_reason, bad.attempts_made, bad.opts["backoff"]) == (
        "fail 1",
        2,
        {"type": "fixed", "delay": 5},
    )
    assert bad.stacktrace and "fail 1" in bad.stacktrace[-1]


async def test_failed_attempts_leave_as_many_traces_as_node_leaves(
    queue: Queue, node: Node, queue_name: str
) -> None:
    """One ``stacktrace`` entry per failed attempt, trimmed to ``opts.stackTraceLimit``."""
    jobs = [
        ("t-all", {"i": 1, "fail_times": 9}, {"attempts": 3}),
        ("t-limit", {"i": 2, "fail_times": 9}, {"attempts": 3, "stackTraceLimit": 2}),
        ("t-then-ok", {"i": 3, "fail_times": 2}, {"attempts": 3}),
    ]
    ref_queue = f"{queue_name}-node"
    await node.start(
        "add",
        {"jobs": [{"name": "t", "data": d, "opts": {**o, "jobId": i}} for i, d, o in jobs]},
        queue_name=ref_queue,
    ).aresult()
    node_run = node.start(
        "worker", {"opts": {"concurrency": 1}, "until_finished": len(jobs)}, queue_name=ref_queue
    )
    for job_id, data, opts in jobs:
        extra = {"stackTraceLimit": opts["stackTraceLimit"]} if "stackTraceLimit" in opts else {}
        await queue.aadd("t", data, job_id=job_id, attempts=opts["attempts"], extra=extra)
    await run_our_worker_until(queue, [], len(jobs))
    await node_run.aresult()
    report = node.start("inspect", {"job_ids": [j[0] for j in jobs]}, queue_name=ref_queue)
    theirs = (await report.aresult())["jobs"]
    for job_id, _, _ in jobs:
        ours = await queue.aget_job(job_id, required=True)
        assert ours is not None
        assert len(ours.stacktrace) == len(theirs[job_id]["stacktrace"]), job_id
        assert all("fail" in line for line in ours.stacktrace), job_id
    assert [len(theirs[j[0]]["stacktrace"]) for j in jobs] == [3, 2, 2]
