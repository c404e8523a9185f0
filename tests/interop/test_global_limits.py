"""Queue-wide limits that a Node Queue sets in ``meta`` bind our worker too."""

from __future__ import annotations

import pytest

from django_bullq import Queue
from django_bullq.core.worker import WorkerOptions
from tests.interop.helpers import Call, Node, run_our_worker_until

pytestmark = pytest.mark.interop


async def test_node_global_concurrency_caps_our_worker(queue: Queue, node: Node) -> None:
    await node.ainspect(do=["globalConcurrency:1"])
    for i in range(4):
        await queue.aadd("c", {"i": i, "sleep_ms": 150})
    calls: list[Call] = []
    await run_our_worker_until(
        queue, calls, 4, options=WorkerOptions(concurrency=4, drain_delay=1.0)
    )
    jobs = sorted(await queue.aget_jobs("completed"), key=lambda j: j.processed_on or 0)
    assert len(jobs) == 4
    for before, after in zip(jobs, jobs[1:], strict=False):
        assert before.finished_on is not None and after.processed_on is not None
        assert after.processed_on >= before.finished_on, "two jobs were active at once"


async def test_node_global_rate_limit_binds_our_worker(queue: Queue, node: Node) -> None:
    await node.ainspect(do=["globalRateLimit:2:1000"])
    for i in range(5):
        await queue.aadd("l", {"i": i})
    calls: list[Call] = []
    await run_our_worker_until(
        queue, calls, 5, options=WorkerOptions(concurrency=5, drain_delay=1.0)
    )
    starts = sorted(c.t for c in calls)
    # at most 2 activations per 1000 ms window (the window starts at the first activation;
    # the margin covers the time between an activation and the processor call we record).
    # Unlimited, all five would start within a few ms.
    assert starts[2] - starts[0] >= 800 and starts[4] - starts[2] >= 800
