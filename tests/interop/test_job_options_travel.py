"""Retention options written by one library are obeyed by the other's worker
(``removeOnComplete`` / ``removeOnFail`` as bool, count and ``{age, count}``)."""

from __future__ import annotations

from typing import Any

import pytest

from django_bullq import Queue
from tests.interop.helpers import Call, Node, run_our_worker_until

pytestmark = pytest.mark.interop

#: (key, data, Node/PyPI opts, our add kwargs); run FIFO by a worker with concurrency 1
JOBS: list[tuple[str, dict[str, Any], dict[str, Any], dict[str, Any]]] = [
    *[
        (f"keep2-{i}", {"i": i}, {"removeOnComplete": 2}, {"remove_on_complete": 2})
        for i in range(5)
    ],
    ("gone-on-fail", {"i": 5, "fail_times": 9}, {"removeOnFail": True}, {"remove_on_fail": True}),
    (
        "kept-on-fail",
        {"i": 6, "fail_times": 9},
        {"removeOnFail": {"age": 3600, "count": 5}},
        {"remove_on_fail": {"age": 3600, "count": 5}},
    ),
    ("gone-on-complete", {"i": 7}, {"removeOnComplete": True}, {"remove_on_complete": True}),
]


def check(queue: Queue, ids: dict[str, str]) -> None:
    present = {key for key, job_id in ids.items() if queue.get_job(job_id) is not None}
    assert present == {"keep2-3", "keep2-4", "kept-on-fail"}
    assert set(queue.get_job_ids("completed")) == {ids["keep2-3"], ids["keep2-4"]}
    assert queue.get_job_ids("failed") == [ids["kept-on-fail"]]


def test_node_worker_obeys_our_retention_options(queue: Queue, node: Node) -> None:
    ids = {key: queue.add("keep", data, **ours).id for key, data, _, ours in JOBS}
    report = node.run(
        "worker", {"opts": {"concurrency": 1}, "until_calls": len(JOBS), "timeout_ms": 10000}
    )
    assert not report["timedOut"] and len(report["calls"]) == len(JOBS)
    check(queue, ids)


async def test_our_worker_obeys_node_retention_options(queue: Queue, node: Node) -> None:
    added = await node.arun(
        "add", {"jobs": [{"name": "keep", "data": d, "opts": o} for _, d, o, _ in JOBS]}
    )
    ids = {key: str(i) for (key, *_), i in zip(JOBS, added["ids"], strict=True)}
    calls: list[Call] = []
    await run_our_worker_until(queue, calls, len(JOBS), until_calls=True)
    assert len(calls) == len(JOBS)
    check(queue, ids)
