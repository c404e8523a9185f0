"""Flows shared with the real Node bullmq 6.7.0, both ways (issue 3, scope 1).

(a) our FlowProducer: the parent runs on our worker, the children on a Node worker (one child
    fails with failParentOnFailure in a second flow); Node getFlow / getDependencies read it.
(b) a Node FlowProducer flow (3 levels, two queues) processed by our worker: children values
    reach the parent; Node reads the results back.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from django_bullq import FlowProducer, Job
from tests.core.test_flow import run_workers
from tests.interop.helpers import Node

pytestmark = pytest.mark.interop


@pytest.fixture
def flows(redis_url: str) -> Iterator[FlowProducer]:
    producer = FlowProducer(redis_url)
    yield producer
    producer.close()


@pytest.fixture
def queues() -> tuple[str, str]:
    tag = uuid.uuid4().hex[:8]
    return f"ip-{tag}", f"ic-{tag}"


async def parent_proc(job: Job) -> Any:
    return {"name": job.name, "children": await job.aget_children_values()}


async def test_parent_ours_children_node(
    flows: FlowProducer, node: Node, queues: tuple[str, str]
) -> None:
    pq, cq = queues
    ok = await flows.aadd(
        {
            "name": "parent",
            "queue_name": pq,
            "data": {},
            "children": [
                {"name": "c", "queue_name": cq, "data": {"i": 1}},
                {"name": "c", "queue_name": cq, "data": {"i": 2, "result": {"x": "a/b"}}},
            ],
        }
    )
    doomed = await flows.aadd(
        {
            "name": "parent",
            "queue_name": pq,
            "data": {},
            "children": [
                {
                    "name": "bad",
                    "queue_name": cq,
                    "data": {"fail_times": 9},
                    "opts": {"fail_parent_on_failure": True},
                }
            ],
        }
    )
    theirs = node.start("worker", {"until_finished": 3, "opts": {"drainDelay": 1}}, queue_name=cq)
    await asyncio.to_thread(theirs.wait_ready)
    pqueue = flows.queue(pq)
    await run_workers(
        [pqueue],
        lambda: (
            pqueue.get_job_state(ok.job.id) == "completed"
            and pqueue.get_job_state(doomed.job.id) == "failed"
        ),
        processor=parent_proc,
        timeout=15.0,
    )
    report = await theirs.aresult()
    assert {c["data"].get("i") for c in report["calls"]} >= {1, 2}

    k1, k2 = (f"bull:{cq}:{c.job.id}" for c in ok.children)
    assert ok.job.refresh().returnvalue == {
        "name": "parent",
        "children": {k1: {"by": "node", "i": 1, "attempt": 0}, k2: {"x": "a/b"}},
    }
    bad_key = f"bull:{cq}:{doomed.children[0].job.id}"
    assert doomed.job.refresh().failed_reason == f"child {bad_key} failed"

    read = await node.arun(
        "flow",
        {
            "actions": [
                {"getFlow": {"queueName": pq, "id": ok.job.id}},
                {"dependencies": {"queueName": pq, "id": ok.job.id}},
                {"getFlow": {"queueName": pq, "id": doomed.job.id}},
            ]
        },
    )
    flow, deps, failed_flow = read["results"]
    assert flow["flow"]["state"] == "completed"
    assert sorted(c["id"] for c in flow["flow"]["children"]) == sorted(
        c.job.id for c in ok.children
    )
    assert {c["state"] for c in flow["flow"]["children"]} == {"completed"}
    assert deps["counts"]["processed"] == 2 and deps["counts"]["unprocessed"] == 0
    assert deps["values"] == {k1: {"by": "node", "i": 1, "attempt": 0}, k2: {"x": "a/b"}}
    assert failed_flow["flow"]["state"] == "failed"
    assert failed_flow["flow"]["children"][0]["state"] == "failed"


async def test_node_flow_processed_by_our_worker(
    flows: FlowProducer, node: Node, queues: tuple[str, str]
) -> None:
    pq, cq = queues
    tree = {
        "name": "parent",
        "queueName": pq,
        "data": {},
        "children": [
            {"name": "c1", "queueName": cq, "data": {}},
            {
                "name": "mid",
                "queueName": cq,
                "data": {},
                "children": [
                    {"name": "leaf", "queueName": pq, "data": {}, "opts": {"jobId": "leaf-1"}}
                ],
            },
        ],
    }
    added = (await node.arun("flow", {"actions": [{"add": tree}]}))["results"][0]["tree"]
    parent_id = added["id"]
    ours = [flows.queue(pq), flows.queue(cq)]
    assert ours[0].get_job_state(parent_id) == "waiting-children"
    await run_workers(
        ours,
        lambda: ours[0].get_job_state(parent_id) == "completed",
        processor=parent_proc,
        timeout=15.0,
    )

    c1_id, mid_id = (c["id"] for c in added["children"])
    parent = ours[0].get_job(parent_id, required=True)
    assert parent is not None
    assert parent.returnvalue == {
        "name": "parent",
        "children": {
            f"bull:{cq}:{c1_id}": {"name": "c1", "children": {}},
            f"bull:{cq}:{mid_id}": {
                "name": "mid",
                "children": {f"bull:{pq}:leaf-1": {"name": "leaf", "children": {}}},
            },
        },
    }

    read = await node.arun(
        "flow",
        {
            "actions": [
                {"getFlow": {"queueName": pq, "id": parent_id}},
                {"dependencies": {"queueName": cq, "id": mid_id}},
            ]
        },
    )
    flow, deps = read["results"]
    assert flow["flow"]["returnvalue"] == parent.returnvalue
    mid = next(c for c in flow["flow"]["children"] if c["id"] == mid_id)
    assert mid["children"][0]["id"] == "leaf-1" and mid["state"] == "completed"
    assert deps["values"] == {f"bull:{pq}:leaf-1": {"name": "leaf", "children": {}}}


async def test_pypi_flow_processed_by_our_worker(
    flows: FlowProducer, redis_url: str, queues: tuple[str, str]
) -> None:
    import bullmq

    pq, cq = queues
    producer = bullmq.FlowProducer({"connection": redis_url})
    try:
        added = await producer.add(
            {
                "name": "parent",
                "queueName": pq,
                "data": {},
                "children": [
                    {"name": "c1", "queueName": cq, "data": {}},
                    {
                        "name": "c2",
                        "queueName": cq,
                        "data": {},
                        "opts": {"ignoreDependencyOnFailure": True},
                    },
                ],
            }
        )
    finally:
        await producer.close()
    parent_id = str(added["job"].id)
    child_ids = [str(c["job"].id) for c in added["children"]]
    ours = [flows.queue(pq), flows.queue(cq)]

    async def proc(job: Job) -> Any:
        if job.name == "c2":
            raise RuntimeError("c2 broke")
        return await parent_proc(job)

    await run_workers(
        ours, lambda: ours[0].get_job_state(parent_id) == "completed", processor=proc, timeout=15.0
    )
    parent = ours[0].get_job(parent_id, required=True)
    assert parent is not None
    assert parent.returnvalue == {
        "name": "parent",
        "children": {f"bull:{cq}:{child_ids[0]}": {"name": "c1", "children": {}}},
    }
    assert parent.get_dependencies()["ignored"] == {f"bull:{cq}:{child_ids[1]}": "c2 broke"}
