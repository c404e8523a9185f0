"""(a) Jobs that django_bullq adds are processed by the real Node and PyPI BullMQ workers."""

from __future__ import annotations

import time
from typing import Any

import bullmq
import pytest

from django_bullq import Queue
from tests.interop.helpers import Boom, Node, behave, finished_count, wait_for
from tests.interop.scenario import JOBS, Attempt, check_outcomes, our_add_kwargs

pytestmark = pytest.mark.interop


def add_mix(q: Queue) -> dict[str, str]:
    return {key: q.add(name, data, **our_add_kwargs(opts)).id for key, name, data, opts in JOBS}


def test_node_worker_processes_our_jobs(queue: Queue, node: Node) -> None:
    ids = add_mix(queue)
    report = node.run(
        "worker",
        {
            "opts": {"concurrency": 1, "drainDelay": 1},
            "until_finished": len(JOBS),
            "timeout_ms": 12000,
        },
    )
    assert not report["timedOut"], report
    assert report["errors"] == [] and report["stalled"] == []
    calls = [Attempt(str(c["id"]), c["attemptsMade"], c["t"]) for c in report["calls"]]
    check_outcomes(queue, ids, calls, by="node")


async def test_pypi_worker_processes_our_jobs(queue: Queue, redis_url: str) -> None:
    ids = add_mix(queue)
    calls: list[Attempt] = []

    async def process(job: Any, token: str) -> Any:
        calls.append(Attempt(str(job.id), job.attemptsMade, int(time.time() * 1000)))
        return behave(job.data, job.attemptsMade, "pypi")

    worker = bullmq.Worker(
        queue.name, process, {"connection": redis_url, "concurrency": 1, "drainDelay": 1}
    )
    try:
        await wait_for(lambda: _done(queue), 12, f"{len(JOBS)} finished jobs")
    finally:
        await worker.close()
    check_outcomes(queue, ids, calls, by="pypi")


async def _done(q: Queue) -> bool:
    return await finished_count(q) >= len(JOBS)


def test_behave_contract() -> None:
    """The shared processor contract itself (so a failure above is not a test-helper bug)."""
    with pytest.raises(Boom, match="fail 0"):
        behave({"fail_times": 1}, 0, "x")
    assert behave({"fail_times": 1, "i": 2}, 1, "x") == {"by": "x", "i": 2, "attempt": 1}
    assert behave({"result": None}, 0, "x") is None
