"""Flows in the Django layer: ``task.node(...)``, ``add_flow`` / ``add_chain`` (docs/flows.md)."""

from __future__ import annotations

import asyncio

from django_bullq.producer.flows import aadd_flow, add_chain, flow_producer
from django_bullq.producer.task import task
from django_bullq.worker.dispatch import current_job
from tests.support.helpers_django import burst


@task(name="tests.flows.step")
def step(n: int) -> int:
    job = current_job()
    assert job is not None
    return n + sum(job.get_children_values().values())


def test_chain_of_task_nodes_runs_in_order(queue_name: str) -> None:
    on_queue = step.using(queue=queue_name)
    root = add_chain([on_queue.node(1), on_queue.node(10), on_queue.node(100)])
    assert root.job.get_state() == "waiting-children"
    burst(queue_name)
    assert root.job.refresh().returnvalue == 111


async def test_tree_of_task_nodes(queue_name: str) -> None:
    on_queue = step.using(queue=queue_name)
    parent = on_queue.node(1000)
    parent["children"] = [on_queue.node(1), on_queue.using(attempts=2).node(2)]
    assert parent["children"][1]["opts"] == {"attempts": 2}
    root = await aadd_flow(parent)
    await asyncio.to_thread(burst, queue_name)
    assert root.job.refresh().returnvalue == 1003
    assert flow_producer(queue_name).get_flow(queue_name, root.job.id) is not None
