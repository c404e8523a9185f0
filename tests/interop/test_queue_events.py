"""(d) A real Node ``QueueEvents`` receives the events our worker emits, shaped as Node's own."""

from __future__ import annotations

from typing import Any

import pytest

from django_bullq import Queue
from tests.interop.helpers import Call, Node, must_get, run_our_worker_until

pytestmark = pytest.mark.interop

#: job id -> (data, our add options, Node add options)
JOBS: dict[str, tuple[dict[str, Any], dict[str, Any], dict[str, Any]]] = {
    "ev-ok": ({"progress": 33, "result": {"ok": True}}, {}, {}),
    "ev-bad": ({"fail_times": 9}, {"attempts": 1}, {"attempts": 1}),
    "ev-delayed": ({"i": 3}, {"delay": 300}, {"delay": 300}),
    "ev-retry": (
        {"fail_times": 1, "result": "second time"},
        {"attempts": 2, "backoff": 100},
        {"attempts": 2, "backoff": 100},
    ),
}

EXPECTED = {
    "ev-ok": ["added", "waiting", "active", "progress", "completed"],
    "ev-bad": ["added", "waiting", "active", "failed", "retries-exhausted"],
    "ev-delayed": ["added", "delayed", "waiting", "active", "completed"],
    "ev-retry": ["added", "waiting", "active", "delayed", "waiting", "active", "completed"],
}


def by_job(events: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for e in events:
        job_id = e["args"].get("jobId")
        if job_id is not None:
            out.setdefault(job_id, []).append(e)
    return out


async def test_node_queue_events_receives_our_events(queue: Queue, node: Node) -> None:
    listener = node.start("events", {"final_ids": list(JOBS), "timeout_ms": 15000})
    listener.wait_ready()
    for job_id, (data, opts, _) in JOBS.items():
        await queue.aadd("ev", data, job_id=job_id, **opts)
    calls: list[Call] = []
    await run_our_worker_until(queue, calls, len(JOBS))
    report = await listener.aresult(20)
    assert not report["timedOut"], report["events"]
    events = report["events"]
    jobs = by_job(events)
    assert {k: [e["event"] for e in v] for k, v in jobs.items()} == EXPECTED

    ok = {e["event"]: e["args"] for e in jobs["ev-ok"]}
    assert ok["added"] == {"jobId": "ev-ok", "name": "ev"}
    assert ok["active"] == {"jobId": "ev-ok", "prev": "waiting"}
    assert ok["progress"] == {"jobId": "ev-ok", "data": 33}
    assert ok["completed"] == {"jobId": "ev-ok", "returnvalue": {"ok": True}, "prev": "active"}
    bad = {e["event"]: e["args"] for e in jobs["ev-bad"]}
    assert bad["failed"] == {"jobId": "ev-bad", "failedReason": "fail 0", "prev": "active"}
    assert bad["retries-exhausted"] == {"jobId": "ev-bad", "attemptsMade": "1"}
    delayed = jobs["ev-delayed"]
    assert delayed[1]["args"] == {
        "jobId": "ev-delayed",
        "delay": must_get(queue, "ev-delayed").timestamp + 300,
    }
    assert delayed[2]["args"] == {"jobId": "ev-delayed", "prev": "delayed"}
    retry = jobs["ev-retry"]
    assert retry[3]["args"]["delay"] >= must_get(queue, "ev-retry").timestamp + 100
    assert retry[4]["args"] == {"jobId": "ev-retry", "prev": "delayed"}
    assert retry[-1]["args"]["returnvalue"] == "second time"

    last_final = max(i for i, e in enumerate(events) if e["event"] in ("completed", "failed"))
    assert any(e["event"] == "drained" for e in events[last_final + 1 :])


async def test_our_event_stream_has_the_shape_of_node_workers(
    queue: Queue, node: Node, queue_name: str
) -> None:
    """The same jobs on two queues, one run by our worker, one by Node's: same per-job events."""
    ref_queue = f"{queue_name}-node"
    node_add = node.start(
        "add",
        {
            "jobs": [
                {"name": "ev", "data": d, "opts": {**o, "jobId": i}}
                for i, (d, _, o) in JOBS.items()
            ]
        },
        queue_name=ref_queue,
    )
    await node_add.aresult()
    node_run = node.start(
        "worker", {"opts": {"concurrency": 1}, "until_finished": len(JOBS)}, queue_name=ref_queue
    )
    for job_id, (data, opts, _) in JOBS.items():
        await queue.aadd("ev", data, job_id=job_id, **opts)
    await run_our_worker_until(queue, [], len(JOBS))
    await node_run.aresult()

    theirs = node.start(
        "events", {"final_ids": list(JOBS), "timeout_ms": 10000}, queue_name=ref_queue
    )
    ours = node.start("events", {"final_ids": list(JOBS), "timeout_ms": 10000})
    their_events, our_events = (await theirs.aresult())["events"], (await ours.aresult())["events"]

    def shape(events: list[dict[str, Any]]) -> dict[str, list[tuple[str, list[str]]]]:
        return {k: [(e["event"], sorted(e["args"])) for e in v] for k, v in by_job(events).items()}

    assert shape(our_events) == shape(their_events)
    assert [e["event"] for e in our_events if "jobId" not in e["args"]] == [
        e["event"] for e in their_events if "jobId" not in e["args"]
    ]
