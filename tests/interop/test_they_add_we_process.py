"""(b) Jobs that the real Node and PyPI BullMQ queues add are processed by our Worker."""

from __future__ import annotations

import bullmq
import pytest

from django_bullq import Queue
from tests.interop.helpers import Call, Node, must_get, run_our_worker_until
from tests.interop.scenario import JOBS, Attempt, check_outcomes

pytestmark = pytest.mark.interop


def _attempts(calls: list[Call]) -> list[Attempt]:
    return [Attempt(c.id, c.attempts_made, c.t) for c in calls]


async def test_our_worker_processes_node_jobs(queue: Queue, node: Node) -> None:
    added = await node.arun(
        "add", {"jobs": [{"name": n, "data": d, "opts": o} for _, n, d, o in JOBS]}
    )
    ids = {key: str(i) for (key, *_), i in zip(JOBS, added["ids"], strict=True)}
    calls: list[Call] = []
    await run_our_worker_until(queue, calls, len(JOBS))
    check_outcomes(queue, ids, _attempts(calls), by="ours")

    # what Node reads back from the jobs our worker finished
    seen = (await node.ainspect(list(ids.values())))["jobs"]
    for key, job_id in ids.items():
        ours = must_get(queue, job_id)
        theirs = seen[job_id]
        assert theirs["state"] == ("failed" if key == "doomed" else "completed")
        assert theirs["returnvalue"] == ours.returnvalue
        assert theirs["attemptsMade"] == ours.attempts_made
        assert theirs["failedReason"] == ours.failed_reason
        assert theirs["data"] == ours.data
    assert seen[ids["value"]]["returnvalue"] == ["a", 1, None, {"x": "a/b", "u": "é"}]
    assert seen[ids["retry"]]["returnvalue"] == {"by": "ours", "i": 6, "attempt": 2}
    assert seen[ids["doomed"]]["failedReason"] == "fail 1"


async def test_our_worker_processes_pypi_jobs(queue: Queue, redis_url: str) -> None:
    producer = bullmq.Queue(queue.name, {"connection": redis_url})
    try:
        ids = {key: str((await producer.add(n, d, o)).id) for key, n, d, o in JOBS}
    finally:
        await producer.close()
    calls: list[Call] = []
    await run_our_worker_until(queue, calls, len(JOBS))
    check_outcomes(queue, ids, _attempts(calls), by="ours")

    reader = bullmq.Queue(queue.name, {"connection": redis_url})
    try:
        for key, job_id in ids.items():
            theirs = await reader.getJob(job_id)
            assert theirs is not None
            ours = must_get(queue, job_id)
            assert theirs.returnvalue == ours.returnvalue, key
            assert theirs.attemptsMade == ours.attempts_made, key
            assert (theirs.failedReason or None) == ours.failed_reason, key
            assert await reader.getJobState(job_id) == (
                "failed" if key == "doomed" else "completed"
            )
    finally:
        await reader.close()
