"""Case B33: a failover must not kill the worker's fetch loop; Sentinel failovers lose no
acknowledged job.

A real Sentinel set (one master, one replica, three sentinels on loopback) per test; the
worker and the producers reach it through a ``redis+sentinel://`` URL. "Acknowledged" means the
add returned and ``WAIT 1`` confirmed that the replica holds it: Redis replication is
asynchronous, so a job the master alone had when it died is not something any client can keep
(docs/redis-topologies.md).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from django_bullq import Job, Queue
from django_bullq.core.serialization import to_str
from tests.support.redis_nodes import wait_until
from tests.support.redis_sentinel import SentinelSet
from tests.support.workerkit import make_worker


@pytest.fixture
def sentinels() -> Iterator[SentinelSet]:
    deployment = SentinelSet().start()
    yield deployment
    deployment.cleanup()


def add_acknowledged(queue: Queue, name: str, data: Any) -> str | None:
    """Add a job and ``WAIT`` on the same connection for one replica to have it.

    Returns:
        The job id once a replica holds it; None when the add went through but no replica
        confirmed it within 1 s (not acknowledged).
    """
    call, _, _ = queue._add_call(name, data, None, {})
    pipe = queue.client.pipeline(transaction=False)
    queue.scripts.run(call.script, call.keys, call.args, client=pipe)
    pipe.execute_command("WAIT", 1, 1000)
    job_id, replicas = pipe.execute()
    return str(to_str(job_id)) if int(replicas) >= 1 else None


class Producer(threading.Thread):
    """Adds jobs in a loop until stopped; records the acknowledged ids and the errors."""

    def __init__(self, queue: Queue) -> None:
        super().__init__(daemon=True)
        self.queue = queue
        self.acked: list[str] = []
        self.errors: list[str] = []
        self.stop = threading.Event()

    def run(self) -> None:
        n = 0
        while not self.stop.is_set():
            n += 1
            try:
                job_id = add_acknowledged(self.queue, "job", {"n": n})
                if job_id is not None:
                    self.acked.append(job_id)
            except redis.RedisError as exc:  # master gone: not acknowledged, try again
                self.errors.append(type(exc).__name__)
                time.sleep(0.05)
            time.sleep(0.005)


async def wait_for(condition: Any, timeout: float, what: str, task: asyncio.Task[Any]) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if task.done():
            task.result()
            raise AssertionError(f"the worker stopped while waiting for {what}")
        assert time.monotonic() < deadline, f"{what} not reached within {timeout} s"
        await asyncio.sleep(0.02)


def worker_errors(caplog: pytest.LogCaptureFixture) -> list[str]:
    """What the worker logged of the failover: an outage line (core/worker/outage.py: the
    first "unreachable, retrying" at WARNING, a lone failed call at DEBUG: "a call failed"),
    or for another error (UNBLOCKED, READONLY) its "fetch failed" / "marker wait failed"
    warning."""
    marks = ("unreachable", "a call failed", "fetch failed", "marker wait failed")
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "django_bullq.worker" and any(m in r.getMessage() for m in marks)
    ]


async def test_case_b33_master_killed_no_acknowledged_job_lost(
    sentinels: SentinelSet, caplog: pytest.LogCaptureFixture
) -> None:
    """SIGKILL the master mid-run: sentinels promote the replica, the worker follows it, and
    every acknowledged job completes on the new master."""
    caplog.set_level(logging.DEBUG, logger="django_bullq.worker")
    name = f"s-{uuid.uuid4().hex[:8]}"
    queue = Queue(name, sentinels.url)
    processed: set[str] = set()

    async def proc(job: Job) -> int:
        processed.add(job.id)
        await asyncio.sleep(0.01)
        return int(job.data["n"])

    worker = make_worker(queue, proc, concurrency=4, lock_duration=2000, stalled_interval=1000)
    task = asyncio.create_task(worker.arun())
    producer = Producer(Queue(name, sentinels.url))
    producer.start()
    try:
        await wait_for(
            lambda: len(producer.acked) >= 30 and len(processed) >= 20,
            20,
            "traffic before the failover",
            task,
        )
        old_port = sentinels.master.port
        sentinels.master.kill()
        await wait_for(lambda: sentinels.master_port() != old_port, 30, "a new master", task)
        await wait_for(
            lambda: len(producer.errors) > 0 or not producer.is_alive(),
            5,
            "the producer noticing",
            task,
        )
        producer.stop.set()
        producer.join(10)
        after = Queue(name, sentinels.url)
        # Sentinels may still disagree for a moment: a producer retries (docs).
        late = [
            (
                await asyncio.to_thread(
                    wait_until,
                    lambda i=i: after.add("late", {"n": -i}),
                    10,
                    "an add after the failover",
                )
            ).id
            for i in range(5)
        ]
        acked = set(producer.acked)
        await wait_for(
            lambda: (
                acked | set(late) <= processed
                and all(after.get_job_state(i) == "completed" for i in [*acked, *late])
            ),
            30,
            "every acknowledged and late job completed",
            task,
        )
    finally:
        producer.stop.set()
        worker.close()
        await asyncio.wait_for(task, 15)
    assert not task.exception()
    new_master = sentinels.node_on(sentinels.master_port()).client()
    assert new_master.info("replication")["role"] == "master"
    new_master.close()
    for q in (queue, after, producer.queue):
        q.close()
    assert len(acked) >= 30
    assert worker_errors(caplog), "the worker never saw the failover"


async def test_case_b33_demoted_master_unblocks_worker_which_follows_the_new_one(
    sentinels: SentinelSet, caplog: pytest.LogCaptureFixture
) -> None:
    """SENTINEL FAILOVER while the worker blocks on the marker: the old master turns replica
    (its blocked clients get UNBLOCKED, its writers READONLY); the worker backs off, reconnects
    through the sentinels and processes a job added to the new master."""
    caplog.set_level(logging.DEBUG, logger="django_bullq.worker")
    name = f"s-{uuid.uuid4().hex[:8]}"
    queue = Queue(name, sentinels.url)
    done: list[str] = []
    worker = make_worker(queue, lambda job: done.append(job.id), drain_delay=5.0)
    task = asyncio.create_task(worker.arun())
    old = sentinels.master.client()
    try:
        first = queue.add("before", {})
        await wait_for(lambda: first.id in done, 10, "a job before the failover", task)

        def blocked() -> bool:
            return any(
                c.get("name") == worker.client_name and c.get("cmd") == "bzpopmin"
                for c in old.client_list()
            )

        await wait_for(blocked, 10, "the worker blocking on the old master", task)
        sentinel = sentinels.sentinels[0].client()
        sentinel.execute_command("SENTINEL", "FAILOVER", sentinels.service)
        sentinel.close()
        await wait_for(
            lambda: sentinels.master_port() == sentinels.replica.port,
            30,
            "the replica promoted",
            task,
        )
        await asyncio.to_thread(
            wait_until,
            lambda: old.info("replication")["role"] == "slave",
            30,
            "the old master demoted to replica",
        )
        producer = Queue(name, sentinels.url)
        job = await asyncio.to_thread(
            wait_until, lambda: producer.add("after", {}), 10, "an add after the failover"
        )
        await wait_for(lambda: job.id in done, 15, "the job added after the failover", task)
        # the processor has run; its finish call may still be on its way (a loaded machine)
        await wait_for(
            lambda: producer.get_job_state(job.id) == "completed", 15, "its completion", task
        )
        assert worker_errors(caplog), "the worker never saw the failover"
        producer.close()
    finally:
        worker.close()
        await asyncio.wait_for(task, 15)
        old.close()


def test_thread_pipeline_writes_to_the_master_the_sentinels_name(sentinels: SentinelSet) -> None:
    """``Queue.add`` from a thread goes out on the thread pipeline's own connection, which must
    ask the sentinels for the master as redis-py's own calls do. redis-py 7 and 8 connect a
    fresh connection inside ``send_packed_command`` without Sentinel's lookup, to the
    connection's default ``localhost:6379``: refused on a machine without a Redis there, and
    a stranger's Redis on one that has it."""
    queue = Queue(f"s-{uuid.uuid4().hex[:8]}", sentinels.url)
    try:
        job = queue.add("to-the-master", {"n": 1})
        conn = queue.pipeline._conn
        assert conn is not None, "the add did not go through the thread pipeline"
        assert conn._sock.getpeername()[1] == sentinels.master.port
        master = sentinels.master.client()
        try:
            assert master.exists(f"bull:{queue.name}:{job.id}")
        finally:
            master.close()
    finally:
        queue.close()
