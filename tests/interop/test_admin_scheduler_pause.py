"""The admin's pause of one job scheduler (docs/admin.md, "Schedules") under a real Node
BullMQ worker: nothing of a paused scheduler runs, and a resume runs on."""

from __future__ import annotations

import pytest

from django_bullq import Queue
from django_bullq.admin import schedules
from tests.interop.helpers import Node

pytestmark = pytest.mark.interop


def ran(report: dict[str, object]) -> list[str]:
    calls = report["calls"]
    assert isinstance(calls, list)
    return [str(c["id"]) for c in calls]


async def test_a_paused_scheduler_is_not_run_by_a_node_worker_and_resumes(
    queue: Queue, node: Node
) -> None:
    queue.upsert_job_scheduler("held", {"every": 200}, {"name": "tick", "data": {}})
    first = await node.arun("worker", {"until_finished": 2, "opts": {"drainDelay": 1}})
    assert len(ran(first)) >= 2 and not first["errors"], first
    before = queue.get_job_scheduler("held")
    assert before is not None and before.iteration_count is not None

    schedules.pause(queue, "held")
    listed = await node.arun("schedulers", {})
    assert listed["list"] == [] and listed["count"] == 0  # Node's dashboards: not listed
    # seven runs would be due in this window, were it not paused
    idle = await node.arun("worker", {"run_ms": 1500, "opts": {"drainDelay": 1}})
    assert ran(idle) == [] and not idle["errors"], idle
    assert [i for i in queue.get_job_ids("waiting", "delayed") if i.startswith("repeat:")] == []

    schedules.resume(queue, "held")
    done = sum(queue.get_job_counts("completed", "failed").values())
    again = await node.arun("worker", {"until_finished": done + 2, "opts": {"drainDelay": 1}})
    resumed = ran(again)
    assert len(resumed) >= 2 and all(i.startswith("repeat:held:") for i in resumed), again
    after = queue.get_job_scheduler("held")
    assert after is not None and after.iteration_count is not None
    assert after.iteration_count > before.iteration_count  # the count goes on, not from 1
