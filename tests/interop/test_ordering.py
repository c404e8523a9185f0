"""Adds from both libraries interleave on one queue in one order: the delayed-score sequence
for jobs due in the same millisecond and the shared priority counter ``pc`` are respected."""

from __future__ import annotations

import time
from typing import cast

import pytest
import redis

from django_bullq import Queue
from tests.interop.helpers import Call, Node, run_our_worker_until

pytestmark = pytest.mark.interop


async def test_same_due_ms_and_same_priority_keep_add_order(
    queue: Queue, node: Node, r: redis.Redis
) -> None:
    stamp = int(time.time() * 1000) - 5000  # due in the past: promoted by the first fetch
    order: list[str] = []
    for i, who in enumerate(["ours", "node", "ours", "node"]):
        job_id = f"d-{i}"
        if who == "ours":
            await queue.aadd("d", {"i": i}, job_id=job_id, timestamp=stamp, delay=1000)
        else:
            await node.arun(
                "add",
                {
                    "jobs": [
                        {
                            "name": "d",
                            "data": {"i": i},
                            "opts": {"jobId": job_id, "timestamp": stamp, "delay": 1000},
                        }
                    ]
                },
            )
        order.append(job_id)
    scores = dict(
        cast(
            list[tuple[str, float]], r.zrange(f"bull:{queue.name}:delayed", 0, -1, withscores=True)
        )
    )
    base = (stamp + 1000) * 4096
    assert scores == {f"d-{i}": float(base + i) for i in range(4)}

    for i, who in enumerate(["ours", "node", "ours"]):
        job_id = f"p-{i}"
        if who == "ours":
            await queue.aadd("p", {"i": i}, job_id=job_id, priority=2)
        else:
            await node.arun(
                "add",
                {
                    "jobs": [
                        {"name": "p", "data": {"i": i}, "opts": {"jobId": job_id, "priority": 2}}
                    ]
                },
            )
        order.append(job_id)

    calls: list[Call] = []
    await run_our_worker_until(queue, calls, len(order))
    assert [c.id for c in calls] == order
