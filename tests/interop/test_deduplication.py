"""Deduplication keys that a Node producer sets are released by our worker as by Node's:
simple mode (no TTL) on the job's completion or failure; throttle mode (TTL) only by expiry."""

from __future__ import annotations

import pytest

from django_bullq import Queue
from tests.interop.helpers import Call, Node, run_our_worker_until

pytestmark = pytest.mark.interop


async def test_our_worker_releases_node_simple_dedup_keys(queue: Queue, node: Node) -> None:
    first = await node.arun(
        "add",
        {
            "jobs": [
                {"name": "d", "data": {"i": 1}, "opts": {"deduplication": {"id": "simple"}}},
                {"name": "d", "data": {"i": 2}, "opts": {"deduplication": {"id": "simple"}}},
                {
                    "name": "d",
                    "data": {"i": 3, "fail_times": 9},
                    "opts": {"deduplication": {"id": "simple-fail"}},
                },
                {
                    "name": "d",
                    "data": {"i": 4},
                    "opts": {"deduplication": {"id": "throttle", "ttl": 60_000}},
                },
            ]
        },
    )
    ok_id, dup_id, fail_id, throttle_id = (str(i) for i in first["ids"])
    assert dup_id == ok_id, "Node deduplicated the second add"
    calls: list[Call] = []
    await run_our_worker_until(queue, calls, 3)
    assert sorted(c.data["i"] for c in calls) == [1, 3, 4]
    assert queue.client.exists(queue.keys.de("simple"), queue.keys.de("simple-fail")) == 0

    again = await node.arun(
        "add",
        {
            "jobs": [
                {"name": "d", "data": {"i": 5}, "opts": {"deduplication": {"id": "simple"}}},
                {"name": "d", "data": {"i": 6}, "opts": {"deduplication": {"id": "simple-fail"}}},
                {
                    "name": "d",
                    "data": {"i": 7},
                    "opts": {"deduplication": {"id": "throttle", "ttl": 60_000}},
                },
            ]
        },
    )
    new_ok, new_fail, still_throttled = (str(i) for i in again["ids"])
    assert new_ok not in (ok_id, fail_id, throttle_id)
    assert new_fail not in (ok_id, fail_id, throttle_id, new_ok)
    assert still_throttled == throttle_id, "a TTL key outlives its job until it expires"
    assert (await queue.aget_job_counts("waiting"))["waiting"] == 2


async def test_node_throttle_with_remove_on_complete_outlives_the_job_run_by_us(
    queue: Queue, node: Node
) -> None:
    """Issue 12 item 4 with Node's producer: our removeOnComplete keeps the TTL key, as Node's
    worker does, so Node's next add within the ttl is absorbed."""
    throttle = {"deduplication": {"id": "x", "ttl": 60_000}, "removeOnComplete": True}
    (first,) = (await node.arun("add", {"jobs": [{"name": "d", "data": {}, "opts": throttle}]}))[
        "ids"
    ]
    calls: list[Call] = []
    await run_our_worker_until(queue, calls, 1, until_calls=True)
    assert queue.client.exists(queue.keys.job(str(first))) == 0
    (again,) = (await node.arun("add", {"jobs": [{"name": "d", "data": {}, "opts": throttle}]}))[
        "ids"
    ]
    assert str(again) == str(first)
    assert (await queue.aget_job_counts("waiting"))["waiting"] == 0
