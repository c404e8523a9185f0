"""Redis AUTH, ACL users and TLS end to end, and secrets kept out of logs, errors and reprs
(issue 6, scope 4). Each test starts its own redis-server configured for it."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
import redis

from django_bullq import Connection, FlowProducer, Job, Queue
from django_bullq.core.connection import ConnectionConfigError, redact_url
from django_bullq.core.events import QueueEvents
from tests.support.redis_nodes import RedisNode
from tests.support.redis_security import (
    ACL_PASSWORD,
    ACL_USER,
    PASSWORD,
    acl_server,
    password_server,
    tls_server,
)
from tests.support.workerkit import make_worker, run_all_until, run_until


@pytest.fixture
def node_cleanup() -> Iterator[list[RedisNode]]:
    nodes: list[RedisNode] = []
    yield nodes
    for node in nodes:
        node.cleanup()


def qname() -> str:
    return f"sec-{uuid.uuid4().hex[:8]}"


async def add_and_process(connection: Any) -> Queue:
    """Add a job on ``connection`` and have a worker complete it; returns the queue."""
    queue = Queue(qname(), connection)
    job = queue.add("hello", {"x": 1})
    worker = make_worker(queue, lambda j: j.data["x"] + 1)
    await run_until(worker, lambda: queue.get_job_state(job.id) == "completed")
    assert queue.get_job(job.id).returnvalue == 2
    return queue


async def test_password_in_the_url(node_cleanup: list[RedisNode]) -> None:
    node = password_server()
    node_cleanup.append(node)
    url = f"redis://:{quote(PASSWORD, safe='')}@127.0.0.1:{node.port}/0"
    (await add_and_process(url)).close()
    wrong = Queue(qname(), f"redis://:nope@127.0.0.1:{node.port}/0")
    with pytest.raises(redis.AuthenticationError) as refused:
        wrong.add("x", {})
    assert "nope" not in str(refused.value)
    anonymous = Queue(qname(), f"redis://127.0.0.1:{node.port}/0")
    with pytest.raises(redis.AuthenticationError):
        anonymous.add("x", {})


async def test_password_in_the_options(node_cleanup: list[RedisNode]) -> None:
    node = password_server()
    node_cleanup.append(node)
    connection = Connection(url=f"redis://127.0.0.1:{node.port}/0", options={"password": PASSWORD})
    (await add_and_process(connection)).close()
    assert PASSWORD not in repr(connection)


async def test_acl_user_with_the_documented_rules_runs_every_feature(
    node_cleanup: list[RedisNode],
) -> None:
    """The ACL line of docs/redis-topologies.md is enough for producers and workers."""
    node = acl_server()
    node_cleanup.append(node)
    url = f"redis://{ACL_USER}:{ACL_PASSWORD}@127.0.0.1:{node.port}/0"
    qa, qb = Queue(qname(), url), Queue(qname(), url)
    started = asyncio.Event()

    async def process(job: Job) -> Any:
        if job.name == "slow":
            started.set()
            await asyncio.sleep(30)
        if job.name == "flaky" and job.attempts_made == 0:
            raise RuntimeError("first attempt fails")
        return {"children": await job.aget_children_values()}

    ids = [
        qa.add("plain", {}).id,
        qa.add("delayed", {}, delay=200).id,
        qa.add("prio", {}, priority=2).id,
        qa.add("flaky", {}, attempts=2).id,
        qa.add("dedup", {}, deduplication={"id": "d"}).id,
        *(j.id for j in qa.add_bulk([("bulk", 1), ("bulk", 2)])),
    ]
    qa.upsert_job_scheduler("tick", {"every": 100}, {"name": "tick"}, limit=2)
    tree = FlowProducer(url).add(
        {
            "name": "parent",
            "queue_name": qa.name,
            "children": [{"name": "child", "queue_name": qb.name}],
        }
    )
    slow = qa.add("slow", {})
    qa.set_global_rate_limit(100, 1000)
    reader = QueueEvents(qa, last_id="0", block_ms=10)
    cancelled: list[int] = []

    def done() -> bool:
        if started.is_set() and not cancelled:
            cancelled.append(qa.cancel_job(slow.id, "acl"))  # pub/sub on the control channel
        return (
            all(qa.get_job_state(i) == "completed" for i in [*ids, tree.job.id])
            and qa.get_job_state(slow.id) == "failed"
            and qa.get_job_counts("completed")["completed"] >= len(ids) + 3
        )

    workers = [
        make_worker(
            qa,
            process,
            concurrency=3,
            stalled_interval=200,
            lock_duration=1000,
            maintenance_interval_ms=100,
            remove_on_complete={"count": 100},
        ),
        make_worker(qb, process),
    ]
    await run_all_until(workers, done, timeout=20)
    assert cancelled == [1]
    assert {e.job_id for e in reader.read() if e.event == "completed"} >= set(ids)
    assert qa.get_job_counts()["completed"] >= len(ids)
    assert qa.get_jobs("completed")
    qa.clean(0, 0, "failed")
    qa.obliterate(force=True)
    limited = redis.Redis.from_url(url)
    with pytest.raises(redis.exceptions.NoPermissionError):
        limited.set("elsewhere", 1)  # keys outside the prefix are out of reach
    with pytest.raises(redis.exceptions.NoPermissionError):
        limited.flushall()
    limited.close()
    for queue in (qa, qb):
        queue.close()


async def test_tls_with_a_self_signed_ca(tmp_path: Path, node_cleanup: list[RedisNode]) -> None:
    node = tls_server(tmp_path, password=PASSWORD)
    node_cleanup.append(node)
    url = f"rediss://:{quote(PASSWORD, safe='')}@127.0.0.1:{node.port}/0"
    connection = Connection(url=url, options={"ssl_ca_certs": str(node.certs.ca)})
    queue = await add_and_process(connection)
    queue.close()
    untrusted = Queue(qname(), url)  # the system CAs do not know the test CA
    with pytest.raises(redis.ConnectionError, match="certificate verify failed"):
        untrusted.add("x", {})
    plain = Queue(
        qname(),
        f"redis://:{quote(PASSWORD, safe='')}@127.0.0.1:{node.port}/0",
    )
    with pytest.raises(redis.ConnectionError):
        plain.add("x", {})


async def test_secrets_never_reach_logs_errors_or_reprs(
    node_cleanup: list[RedisNode], caplog: pytest.LogCaptureFixture
) -> None:
    """A worker whose Redis goes away logs connection errors; none carries the password."""
    caplog.set_level(logging.DEBUG)
    node = password_server()
    node_cleanup.append(node)
    secret_url = f"redis://user:{quote(PASSWORD, safe='')}@127.0.0.1:{node.port}/0"

    def add_user() -> None:  # an ACL user made at run time: a restarted server forgets it
        admin = node.client()
        admin.execute_command("ACL", "SETUSER", "user", "on", f">{PASSWORD}", "~*", "&*", "+@all")
        admin.close()

    add_user()
    queue = Queue(qname(), Connection(url=secret_url, options={"password": PASSWORD}))
    job = queue.add("x", {})
    worker = make_worker(queue, lambda j: None)
    task = asyncio.create_task(worker.arun())
    try:
        # Stop Redis only once the job is finished: a finish still on its way would be
        # retried for as long as its lock lives (30 s), longer than the wait below.
        while queue.get_job_state(job.id) != "completed":
            await asyncio.sleep(0.02)
        node.stop()  # every later Redis call of the worker fails and is logged
        while not any("failed" in r.getMessage() for r in caplog.records):
            await asyncio.sleep(0.05)
        node.start()
        add_user()  # so the worker reconnects and closes as it would in production
    finally:
        worker.close()
        await asyncio.wait_for(task, 15)
    texts = [
        caplog.text,
        repr(queue),
        repr(queue.connection),
        queue.connection.describe(),
        repr(job),
    ]
    with pytest.raises(ConnectionConfigError) as bad:
        Connection(url=f"redis+sentinel://:{quote(PASSWORD, safe='')}@127.0.0.1:1").sync_client()
    texts.append(str(bad.value))
    for text in texts:
        assert PASSWORD not in text and quote(PASSWORD, safe="") not in text, text
    assert "***" in queue.connection.describe()
    queue.close()


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("redis://:pw@h:1/0", "redis://:***@h:1/0"),
        ("redis://user:p%40w@h/0", "redis://user:***@h/0"),
        ("rediss://h:1/0?password=pw&db=2", "rediss://h:1/0?password=***&db=2"),
        ("redis+sentinel://:pw@a:1,b:2/mymaster", "redis+sentinel://:***@a:1,b:2/mymaster"),
        ("unix:///tmp/r.sock?password=pw", "unix:///tmp/r.sock?password=***"),
        ("redis://user@h/0", "redis://user@h/0"),
        ("redis+cluster://h:7000", "redis+cluster://h:7000"),
    ],
)
def test_redact_url(url: str, shown: str) -> None:
    assert redact_url(url) == shown
