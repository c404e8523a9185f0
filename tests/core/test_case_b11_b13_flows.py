"""Cases B11 (parent stuck when a runtime-added child fails early) and B13 (colons in job ids
and queue names, flows part). See ../shared/cases/README.md."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from django_bullq import FlowProducer, Job, Queue
from django_bullq.core.errors import InvalidNameError
from tests.core.test_flow import run_workers


@pytest.fixture
def flows(redis_url: str) -> Iterator[FlowProducer]:
    producer = FlowProducer(redis_url)
    yield producer
    producer.close()


@pytest.fixture
def pair(flows: FlowProducer) -> tuple[Queue, Queue]:
    tag = uuid.uuid4().hex[:8]
    return flows.queue(f"P-{tag}"), flows.queue(f"C-{tag}")


def _step_parent(
    child_queue: Queue, parent_queue: Queue, child_opts: dict[str, Any], runs: list[str]
) -> Any:
    async def proc(job: Job) -> Any:
        if job.name == "child":
            raise RuntimeError("child fails at once")
        runs.append(job.id)
        if len(runs) == 1:
            for n in (1, 2):
                await child_queue.aadd(
                    "child",
                    {"n": n},
                    parent={"id": job.id, "queue": parent_queue.keys.queue_key},
                    **child_opts,
                )
            await asyncio.sleep(0.2)  # the children fail meanwhile
            await job.amove_to_waiting_children()
        return "parent done"

    return proc


async def test_case_b11_fail_parent_child_failed_before_parent_waits(
    pair: tuple[Queue, Queue],
) -> None:
    pq, cq = pair
    parent = pq.add("parent", {})
    runs: list[str] = []
    proc = _step_parent(cq, pq, {"fail_parent_on_failure": True}, runs)
    await run_workers([pq, cq], lambda: pq.get_job_state(parent.id) == "failed", processor=proc)
    parent.refresh()
    assert runs == [parent.id]  # one processing cycle, never parked in waiting-children
    assert parent.failed_reason is not None
    assert parent.failed_reason.startswith(f"child {cq.keys.key_prefix}")
    assert parent.failed_reason.endswith(" failed")
    assert pq.get_job_counts("waiting-children")["waiting-children"] == 0
    assert len(parent.get_dependencies()["failed"]) == 2


@pytest.mark.parametrize("where", ["delayed", "prioritized"])
async def test_case_b11_fail_parent_when_parent_delayed_or_prioritized(
    pair: tuple[Queue, Queue], where: str
) -> None:
    pq, cq = pair
    opts = {"delay": 60_000} if where == "delayed" else {"priority": 3}
    parent = pq.add("parent", {}, **opts)
    for n in (1, 2):
        cq.add(
            "child",
            {"n": n},
            parent={"id": parent.id, "queue": pq.keys.queue_key},
            fail_parent_on_failure=True,
        )
    ran: list[str] = []

    async def proc(job: Job) -> Any:
        ran.append(job.name)
        raise RuntimeError("child fails at once")

    await run_workers([cq], lambda: cq.get_job_counts("failed")["failed"] == 2, processor=proc)
    # a delayed parent is released at once; a prioritized one carries the deferred failure
    assert parent.refresh().deferred_failure is not None
    await run_workers([pq], lambda: pq.get_job_state(parent.id) == "failed", processor=proc)
    assert ran == ["child", "child"]  # the parent's processor never ran
    assert "failed" in (parent.refresh().failed_reason or "")


async def test_case_b11_no_policy_parent_waits_and_reports_the_child(
    pair: tuple[Queue, Queue],
) -> None:
    pq, cq = pair
    parent = pq.add("parent", {})
    runs: list[str] = []
    proc = _step_parent(cq, pq, {}, runs)
    await run_workers(
        [pq, cq],
        lambda: (
            cq.get_job_counts("failed")["failed"] == 2
            and pq.get_job_state(parent.id) == "waiting-children"
        ),
        processor=proc,
    )
    # BullMQ's documented default: the failed children stay pending dependencies
    counts = parent.get_dependencies_count()
    assert counts == {"processed": 0, "unprocessed": 2, "ignored": 0, "failed": 0}
    pending = parent.get_dependencies()["unprocessed"]
    assert {cq.get_job_state(k.rsplit(":", 1)[1]) for k in pending} == {"failed"}


async def test_case_b11_ignore_dependency_parent_proceeds(pair: tuple[Queue, Queue]) -> None:
    pq, cq = pair
    parent = pq.add("parent", {})
    runs: list[str] = []
    proc = _step_parent(cq, pq, {"ignore_dependency_on_failure": True}, runs)
    await run_workers([pq, cq], lambda: pq.get_job_state(parent.id) == "completed", processor=proc)
    assert parent.refresh().returnvalue == "parent done"
    assert len(parent.get_dependencies()["ignored"]) == 2


def test_case_b13_flows_reject_colons_up_front(flows: FlowProducer) -> None:
    tag = uuid.uuid4().hex[:8]
    bad_queue = {
        "name": "p",
        "queue_name": f"parent-{tag}",
        "children": [{"name": "c", "queue_name": f"parent-{tag}:child"}],
    }
    with pytest.raises(InvalidNameError, match="must not contain ':'"):
        flows.add(bad_queue)
    bad_id = {
        "name": "p",
        "queue_name": f"parent-{tag}",
        "children": [
            {"name": "c", "queue_name": f"child-{tag}", "opts": {"job_id": "custom:job:id:123"}}
        ],
    }
    with pytest.raises(InvalidNameError, match="must not contain ':'"):
        flows.add(bad_id)
    for job_id in ("a:b", "a:b:c", "a:b:c:d", "123"):
        with pytest.raises(InvalidNameError):
            flows.add({"name": "p", "queue_name": f"parent-{tag}", "opts": {"job_id": job_id}})
    assert flows.queue(f"parent-{tag}").client.keys(f"bull:*-{tag}*") == []
    # ids that follow the rule round-trip through get_flow
    tree = flows.add(
        {
            "name": "p",
            "queue_name": f"parent-{tag}",
            "children": [
                {"name": "c", "queue_name": f"child-{tag}", "opts": {"job_id": "custom-job-id-123"}}
            ],
        }
    )
    read = flows.get_flow(f"parent-{tag}", tree.job.id)
    assert read is not None
    assert [n.job.id for n in read.children] == ["custom-job-id-123"]
    assert read.children[0].job.queue is not None
    assert read.children[0].job.queue.name == f"child-{tag}"
