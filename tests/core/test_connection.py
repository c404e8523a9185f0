"""Connections: client decoding modes (B28), Redis restarts (B27), failover errors (B33-like)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
import redis
import redis.asyncio

from django_bullq import Connection, Job, Queue
from django_bullq.core.connection import ConnectionConfigError
from django_bullq.core.errors import SerializationError
from tests.support.redis_server import RedisServer
from tests.support.workerkit import make_worker, run_until

PAYLOADS: dict[str, Any] = {
    "emoji_zwj": "👩‍👩‍👧‍👦 family 🚀",
    "rtl": "مرحبا بالعالم שלום",
    "nul": "a\u0000b",
    "odd keys": {"a:b": 1, "c.d": 2, "e f": 3},
    "big": "x" * (5 * 1024 * 1024),
    "empties": {"list": [], "dict": {}, "nested": [[], {}]},
    "float": 1e308,
    "neg_zero_int": -0,
}


def _clients(redis_url: str, mode: str) -> tuple[Any, Any]:
    if mode == "shared":
        shared = redis.Redis.from_url(redis_url, decode_responses=True)
        return shared, shared
    decode = mode == "decode"
    return (
        redis.Redis.from_url(redis_url, decode_responses=decode),
        redis.asyncio.Redis.from_url(redis_url, decode_responses=decode),
    )


@pytest.mark.parametrize("mode", ["decode", "bytes", "shared"])
async def test_case_b28_client_decoding_modes_round_trip(
    redis_url: str, queue_name: str, mode: str
) -> None:
    """B28: byte-exact round trip for every payload in every client mode."""
    sync_client, async_client = _clients(redis_url, mode)
    producer = Queue(queue_name, sync_client)
    consumer_conn = Connection(
        url=redis_url if mode == "shared" else None,
        client=sync_client,
        async_client=None if mode == "shared" else async_client,
    )
    consumer = Queue(queue_name, consumer_conn)
    seen: dict[str, Any] = {}
    name = "ünïcødé 🚀"
    for key, value in PAYLOADS.items():
        producer.add(name, {"key": key, "value": value}, job_id=f"job-{key.replace(' ', '-')}")

    def proc(job: Job) -> Any:
        assert job.name == name
        seen[job.data["key"]] = job.data["value"]
        return job.data["value"]

    worker = make_worker(consumer, proc)
    await run_until(worker, lambda: len(seen) == len(PAYLOADS), timeout=30)
    for key, value in PAYLOADS.items():
        assert seen[key] == value
        stored = producer.get_job(f"job-{key.replace(' ', '-')}")
        assert stored is not None and stored.name == name
        assert stored.data["value"] == value
        assert stored.returnvalue == value
    assert seen["empties"] == {"list": [], "dict": {}, "nested": [[], {}]}
    sync_client.close()


def test_case_b28_lone_surrogates_rejected_at_add(queue: Queue) -> None:
    with pytest.raises(SerializationError, match="not valid Unicode"):
        queue.add("x", {"bad": "\ud800"})
    with pytest.raises(SerializationError, match="not JSON-serialisable"):
        queue.add("x", {"nan": float("nan")})
    assert queue.get_job_counts("waiting")["waiting"] == 0


async def test_case_b27_work_resumes_after_redis_restart(queue_name: str) -> None:
    """B27: a delayed job and a long active job are not parked after Redis restarts."""
    server = RedisServer(persistent=True).start()
    try:
        queue = Queue(queue_name, server.url)
        runs: dict[str, list[float]] = {}

        async def proc(job: Job) -> str:
            runs.setdefault(job.name, []).append(time.monotonic())
            if job.name == "B":
                await asyncio.sleep(1.5)
            return job.name

        worker = make_worker(
            queue, proc, concurrency=2, lock_duration=2000, stalled_interval=1000, drain_delay=1.0
        )
        task = asyncio.create_task(worker.arun())
        try:
            queue.add("B", {})
            delayed = queue.add("A", {}, delay=1500)
            while "B" not in runs:
                await asyncio.sleep(0.01)
            server.restart()
            restarted = time.monotonic()
            due_in = (delayed.timestamp + 1500) / 1000 - time.time()
            while "A" not in runs or queue.get_job_state("1") != "completed":
                assert time.monotonic() - restarted < 15, (runs, queue.get_job_counts())
                await asyncio.sleep(0.05)
            # A runs within its due time + one block timeout (+ reconnect backoff) of reconnect.
            assert runs["A"][0] - restarted <= max(due_in, 0) + 1.0 + 2.0
        finally:
            worker.close()
            await asyncio.wait_for(task, 15)
        assert queue.get_job_state(delayed.id) == "completed"
        assert queue.get_job("1").returnvalue == "B"
        queue.close()
    finally:
        server.cleanup()


async def test_worker_survives_unblock_error_and_killed_connection(
    queue: Queue, r: redis.Redis
) -> None:
    """B33 shape: CLIENT UNBLOCK ... ERROR and CLIENT KILL on the blocking fetch are survived."""
    done: list[str] = []
    worker = make_worker(queue, lambda job: done.append(job.id), drain_delay=5.0)
    task = asyncio.create_task(worker.arun())
    try:

        def blocked_ids() -> list[int]:
            return [
                c["id"]
                for c in r.client_list()
                if c.get("name") == worker.client_name and c.get("cmd") == "bzpopmin"
            ]

        for action in ("unblock", "kill"):
            deadline = time.monotonic() + 5
            while not blocked_ids():
                assert time.monotonic() < deadline, "worker never blocked on the marker"
                await asyncio.sleep(0.02)
            client_id = blocked_ids()[0]
            if action == "unblock":
                r.execute_command("CLIENT", "UNBLOCK", client_id, "ERROR")
            else:
                r.execute_command("CLIENT", "KILL", "ID", client_id)
            job = queue.add(action, {})
            deadline = time.monotonic() + 5
            while job.id not in done:
                assert time.monotonic() < deadline, f"job not processed after {action}"
                await asyncio.sleep(0.02)
    finally:
        worker.close()
        await asyncio.wait_for(task, 15)


def test_cluster_prefix_without_hash_tag_is_rejected() -> None:
    with pytest.raises(ConnectionConfigError, match="hash tag"):
        Queue("q", "redis+cluster://127.0.0.1:7000", prefix="bull")
    Queue("q", "redis+cluster://127.0.0.1:7000", prefix="{bull}")


def test_unknown_url_scheme_is_rejected() -> None:
    with pytest.raises(ConnectionConfigError, match="scheme"):
        Queue("q", "http://127.0.0.1:6379")


async def test_blocking_client_socket_timeout_is_raised_to_the_minimum() -> None:
    """``min_socket_timeout_s`` (s) only ever raises OPTIONS' socket_timeout; the old keyword
    ``min_socket_timeout`` still works, with a DeprecationWarning."""
    conn = Connection("redis://127.0.0.1:1/0", options={"socket_timeout": 60.0})
    client = conn.new_blocking_client(35.0)
    assert client.connection_pool.connection_kwargs["socket_timeout"] == 60.0
    await client.aclose()
    conn = Connection("redis://127.0.0.1:1/0")
    with pytest.warns(DeprecationWarning, match="'min_socket_timeout_s'"):
        client = conn.new_blocking_client(min_socket_timeout=35.0)
    assert client.connection_pool.connection_kwargs["socket_timeout"] == 35.0
    await client.aclose()


@pytest.mark.parametrize(
    ("url", "address"),
    [
        ("redis://:s3cret@db.example:6380/2", "db.example:6380"),
        ("rediss://cache.example/0", "cache.example:6379"),
        ("redis://[::1]:7000/0", "[::1]:7000"),
        ("unix:///run/redis.sock?db=1", "/run/redis.sock"),
        ("redis+sentinel://:pw@s1:26379,s2:26380/mymaster", "s1:26379,s2:26380"),
    ],
)
def test_address_is_host_and_port_without_credentials(url: str, address: str) -> None:
    assert Connection(url).address() == address


def test_database_index_out_of_range_is_explained(redis_url: str) -> None:
    """``redis://host:port/99`` on a server with 16 databases: say so, not ``ERR DB index``."""
    base = redis_url.rsplit("/", 1)[0]
    connection = Connection(f"{base}/99")
    with pytest.raises(redis.ResponseError) as caught:
        connection.sync_client().ping()
    error = connection.database_error(caught.value)
    address = base.split("//", 1)[1]
    assert isinstance(error, ConnectionConfigError)
    assert f"Redis database 99 does not exist on {address} (databases = 16)" in str(error)
    assert connection.database_error(redis.ResponseError("WRONGTYPE")) is None


async def test_producer_on_a_missing_database_index_says_so(redis_url: str) -> None:
    queue = Queue("q", redis_url.rsplit("/", 1)[0] + "/99")
    with pytest.raises(ConnectionConfigError, match=r"Redis database 99 does not exist on .*16"):
        queue.add("email", {})
    with pytest.raises(ConnectionConfigError, match="Redis database 99 does not exist"):
        await queue.aadd("email", {})
    queue.close()


async def test_a_write_refused_for_want_of_replicas_is_unavailable() -> None:
    """``min-replicas-to-write 1`` with no replica in sync (docs/redis-topologies.md's advice
    for Sentinel): the master refuses the add with ``NOREPLICAS``. The add did not happen, so
    it is retried as an outage is: a :class:`RedisUnavailableError`, not a bare
    ``ResponseError`` that code retrying connection errors lets through. Reads still work."""
    from django_bullq.core.errors import RedisUnavailableError
    from tests.support.redis_nodes import RedisNode

    node = RedisNode(["--min-replicas-to-write", "1"]).start()
    queue = Queue("q", f"redis://127.0.0.1:{node.port}/0")
    try:
        with pytest.raises(RedisUnavailableError, match="NOREPLICAS") as sync_error:
            queue.add("email", {})
        assert "refused the write" in str(sync_error.value)
        with pytest.raises(RedisUnavailableError, match="NOREPLICAS"):
            await queue.aadd("email", {})
        assert queue.get_job_counts()["waiting"] == 0
    finally:
        queue.close()
        node.cleanup()
