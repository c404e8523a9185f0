"""Our QueueEvents reader and Node's QueueEvents see the same events for the same jobs."""

from __future__ import annotations

from typing import Any

import pytest

from django_bullq import Queue
from django_bullq.core.events import QueueEvents
from tests.interop.helpers import Node, run_our_worker_until

pytestmark = pytest.mark.interop


def ours_as_node(reader: QueueEvents) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for event in reader.read():
        args = dict(event.fields)
        if event.job_id is not None:
            args = {"jobId": event.job_id, **args}
        out.append((event.event, args))
    return out


@pytest.mark.parametrize("processed_by", ["ours", "node"])
async def test_same_events_as_node_queue_events(
    queue: Queue, node: Node, processed_by: str
) -> None:
    jobs = {
        "e-ok": ({"progress": 50, "result": {"r": [1, 2]}}, {}),
        "e-bad": ({"fail_times": 5}, {"attempts": 1}),
        "e-late": ({"i": 1}, {"delay": 200}),
    }
    if processed_by == "ours":
        for job_id, (data, opts) in jobs.items():
            await queue.aadd("ev", data, job_id=job_id, **opts)
        await run_our_worker_until(queue, [], len(jobs))
    else:
        node.add(
            [{"name": "ev", "data": d, "opts": {**o, "jobId": i}} for i, (d, o) in jobs.items()]
        )
        await node.arun("worker", {"until_finished": len(jobs)})
    theirs = (await node.arun("events", {"final_ids": list(jobs), "timeout_ms": 10000}))["events"]
    reader = QueueEvents(queue, last_id="0", block_ms=10)
    ours = ours_as_node(reader)
    assert [(e["event"], e["args"]) for e in theirs] == ours
    assert reader.gaps == 0
    completed = [args for name, args in ours if name == "completed" and args["jobId"] == "e-ok"]
    assert completed[0]["returnvalue"] == {"r": [1, 2]}
