"""Operations on single jobs across libraries: promote, remove (refused while the other
library's worker holds the lock), and the events-stream length a Node Queue configures."""

from __future__ import annotations

import asyncio

import pytest
import redis

from django_bullq import Job, Queue, Worker
from django_bullq.core.errors import InvalidNameError
from django_bullq.core.keys import SUFFIXES
from django_bullq.core.worker import WorkerOptions
from tests.interop.helpers import (
    Call,
    Node,
    NodeScriptError,
    must_get,
    run_our_worker_until,
    stream_events,
    wait_for,
)

pytestmark = pytest.mark.interop


async def test_promote_across_libraries(queue: Queue, node: Node, r: redis.Redis) -> None:
    ours = await queue.aadd("later", {"i": 1}, delay=60_000)
    theirs = await node.arun(
        "add",
        {"jobs": [{"name": "later", "data": {"i": 2}, "opts": {"delay": 60_000, "priority": 4}}]},
    )
    their_id = str(theirs["ids"][0])
    await node.ainspect(do=[f"promote:{ours.id}"])
    await queue.apromote(their_id)
    assert (await queue.aget_job_state(ours.id), await queue.aget_job_state(their_id)) == (
        "waiting",
        "prioritized",
    )
    assert (must_get(queue, ours.id).delay, must_get(queue, their_id).delay) == (0, 0)
    promoted = [
        e["jobId"]
        for e in stream_events(r, queue.name)
        if e["event"] == "waiting" and e.get("prev") == "delayed"
    ]
    assert promoted == [ours.id, their_id]
    report = await node.arun(
        "worker", {"opts": {"concurrency": 1}, "until_finished": 2, "timeout_ms": 10000}
    )
    assert [c["data"]["i"] for c in report["calls"]] == [1, 2]


async def test_remove_is_refused_while_the_other_library_holds_the_lock(
    queue: Queue, node: Node, r: redis.Redis
) -> None:
    release = asyncio.Event()

    async def hold(job: Job) -> str:
        await release.wait()
        return "done"

    held = await queue.aadd("held", {"i": 1})
    waiting = await queue.aadd("waiting", {"i": 2}, priority=1)
    worker = Worker(queue, hold, WorkerOptions(concurrency=1, drain_delay=1.0))
    task = asyncio.create_task(worker.arun())
    try:
        await wait_for(
            lambda: _state_is(queue, held.id, "active"), 10, "our worker to start", watch=task
        )
        report = await node.ainspect(do=[f"remove:{held.id}", f"remove:{waiting.id}"])
        assert [d["result"] for d in report["done"]] == [0, 1]
        assert await queue.aget_job_state(held.id) == "active"
        assert await queue.aget_job(waiting.id) is None
        assert report["counts"] == await queue.aget_job_counts()
    finally:
        release.set()
        worker.close()
        await asyncio.wait_for(task, 10)
    assert await queue.aget_job_state(held.id) == "completed"
    removed = [e for e in stream_events(r, queue.name) if e["event"] == "removed"]
    assert removed == [{"event": "removed", "jobId": waiting.id, "prev": "prioritized"}]

    # the other way round: a Node worker holds the job, our remove is refused
    theirs = node.start(
        "worker", {"opts": {"concurrency": 1, "drainDelay": 1}, "hang": True, "timeout_ms": 15000}
    )
    try:
        theirs.wait_ready()
        node_held = await queue.aadd("held-by-node", {"i": 3})
        await wait_for(
            lambda: _state_is(queue, node_held.id, "active"), 10, "the Node worker to start"
        )
        assert await queue.aremove(node_held.id) is False
        assert await queue.aget_job_state(node_held.id) == "active"
    finally:
        theirs.kill()


async def test_our_scripts_trim_events_to_the_length_a_node_queue_set(
    queue: Queue, node: Node, r: redis.Redis
) -> None:
    await node.ainspect(max_len_events=50)
    assert r.hget(f"bull:{queue.name}:meta", "opts.maxLenEvents") == "50"
    jobs = 300
    await queue.aadd_bulk([("e", {"i": i}) for i in range(jobs)])
    calls: list[Call] = []
    await run_our_worker_until(
        queue, calls, jobs, options=WorkerOptions(concurrency=10, drain_delay=1.0)
    )
    # `MAXLEN ~` trims whole stream nodes (100 entries by default), so the stream may run a
    # node past 50; untrimmed it would hold 4 entries per job (added, waiting, active, completed)
    assert r.xlen(f"bull:{queue.name}:events") < 300


async def _state_is(queue: Queue, job_id: str, state: str) -> bool:
    return await queue.aget_job_state(job_id) == state


async def test_node_accepts_queue_key_names_as_job_ids_and_we_refuse_them(
    queue: Queue, node: Node, r: redis.Redis
) -> None:
    """Documented in docs/interop.md (job ids). Node 6.7 takes ``jobId: "meta"``, answers with
    that id and adds nothing (the queue's meta hash exists, so the add counts as a duplicate);
    on an empty queue ``jobId: "wait"`` turns the wait list into a job hash and every later add
    to the queue fails with WRONGTYPE. Our adds refuse every queue-key suffix before writing."""
    added = await node.arun(
        "add", {"jobs": [{"name": "clash", "data": {}, "opts": {"jobId": "meta"}}]}
    )
    assert added["ids"] == ["meta"]
    assert r.llen(queue.keys["wait"]) == 0 and "name" not in r.hgetall(queue.keys["meta"])
    assert [e["jobId"] for e in stream_events(r, queue.name) if e["event"] == "duplicated"] == [
        "meta"
    ]
    for suffix in SUFFIXES:
        with pytest.raises(InvalidNameError):
            await queue.aadd("x", {}, job_id=suffix)
    with pytest.raises(NodeScriptError, match="WRONGTYPE"):
        await node.arun("add", {"jobs": [{"name": "clash", "data": {}, "opts": {"jobId": "wait"}}]})
    assert r.type(queue.keys["wait"]) == "hash"
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        await queue.aadd("after", {})  # the queue is broken for every library
