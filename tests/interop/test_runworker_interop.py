"""(b) through the Django layer: jobs that Node and PyPI producers add under a job name that a
``@task(name=..., raw=True)`` is bound to are run by ``manage.py runworker``."""

from __future__ import annotations

import asyncio

import bullmq
import pytest
from django.core.management import call_command

from tests.interop.helpers import Node

pytestmark = pytest.mark.interop


def test_runworker_runs_jobs_that_node_and_pypi_added(
    node: Node, redis_url: str, queue_name: str
) -> None:
    node_ids = node.add(
        [
            {"name": "email", "data": {"to": "a@example.org"}, "opts": {}},
            {"name": "email", "data": {"to": "b@example.org"}, "opts": {"priority": 2}},
        ]
    )

    async def pypi_add() -> str:
        producer = bullmq.Queue(queue_name, {"connection": redis_url})
        try:
            return str((await producer.add("email", {"to": "c@example.org"}, {})).id)
        finally:
            await producer.close()

    pypi_id = asyncio.run(pypi_add())
    call_command("runworker", queue_name, "--burst")

    report = node.inspect([*node_ids, pypi_id])
    assert report["counts"]["completed"] == 3
    jobs = report["jobs"]
    assert [jobs[i]["returnvalue"] for i in [*node_ids, pypi_id]] == [
        {"to": "a@example.org", "job_id": node_ids[0]},
        {"to": "b@example.org", "job_id": node_ids[1]},
        {"to": "c@example.org", "job_id": pypi_id},
    ]
    assert all(
        jobs[i]["state"] == "completed" and jobs[i]["attemptsMade"] == 1
        for i in [*node_ids, pypi_id]
    )
