"""Shared fixtures: a private redis-server for the session and a fresh queue per test."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from django_bullq import Queue
from tests.support.pg_server import PostgresServer
from tests.support.redis_cluster import RedisCluster
from tests.support.redis_server import RedisServer, _External, session_server

#: Folders of the slow tier (faults, topologies, the browser): run by ``make test``, left out of
#: ``make test-fast`` (``-m "not slow"``).
SLOW_DIRS = frozenset({"faults", "topologies", "browser"})
#: Files of the slow tier in folders that are otherwise fast (subprocess, build and scale suites),
#: relative to tests/.
SLOW_FILES = frozenset(
    {
        "core/test_drain_batching.py",
        "django/test_outbox_postgres.py",
        "django/test_prometheus_cardinality.py",  # 100 queues x 1,000 names, ~100k series
        "django/test_runworker.py",
        "project/test_bench.py",
        "project/test_devredis.py",
        "project/test_example_project.py",
        "project/test_packaging.py",
        "project/test_pytest_pass.py",
        "project/test_typing.py",
    }
)
#: Single tests of the slow tier (subprocesses, long runs) in files that are otherwise fast.
SLOW_TESTS = frozenset(
    {
        "test_case_b16_three_worker_processes_do_not_double_enqueue",
        "test_closing_a_worker_mid_iteration_100_times_keeps_one_pending_iteration",
        "test_real_runworker_beats_and_unregisters_on_sigterm",
    }
)
TESTS = Path(__file__).resolve().parent


def pytest_report_header() -> str:
    """Which server the session runs on (``BULLQ_TEST_SERVER``), on the first lines of a run."""
    server = session_server()
    if isinstance(server, RedisServer):
        return f"test server: {server.kind} {server.version} ({server.binary}) at {server.url}"
    return f"test server: {server.url} (started by the parent process)"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the slow tier, and every browser test (tests/browser/) ``browser``."""
    for item in items:
        where = item.path.resolve().relative_to(TESTS)
        if where.parts[0] == "browser":
            item.add_marker(pytest.mark.browser)
        if (
            where.parts[0] in SLOW_DIRS
            or where.as_posix() in SLOW_FILES
            or item.originalname in SLOW_TESTS
        ):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def redis_server() -> RedisServer | _External:
    """The session's redis-server on a free port (never 127.0.0.1:6379); see session_server()."""
    return session_server()


@pytest.fixture(scope="session")
def redis_cluster() -> Iterator[RedisCluster]:
    """A 3-master Redis Cluster on loopback free ports, started on first use (case B32)."""
    cluster = RedisCluster().start()
    yield cluster
    cluster.cleanup()


@pytest.fixture
def redis_url(redis_server: RedisServer) -> str:
    return redis_server.url


@pytest.fixture
def r(redis_url: str) -> Iterator[redis.Redis]:
    """A decoding sync client on the test server."""
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    yield client
    client.close()


@pytest.fixture
def queue_name() -> str:
    return f"q-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def queue(redis_url: str, queue_name: str) -> Iterator[Queue]:
    """A fresh queue with a unique name on the test server."""
    q = Queue(queue_name, redis_url)
    yield q
    q.close()


@pytest.fixture(scope="module")
def postgres() -> Iterator[PostgresServer]:
    """A private PostgreSQL cluster on a free port, one per test module that asks for it."""
    server = PostgresServer().start()
    try:
        yield server
    finally:
        server.cleanup()


@pytest.fixture
def round_trips(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """``[n]``: socket writes of every sync redis-py connection while the test runs (a
    pipeline or a group-committed write counts once)."""
    count = [0]
    original = redis.connection.AbstractConnection.send_packed_command

    def counting(self: Any, *args: Any, **kwargs: Any) -> None:
        count[0] += 1
        original(self, *args, **kwargs)  # type: ignore[no-untyped-call]

    monkeypatch.setattr(redis.connection.AbstractConnection, "send_packed_command", counting)
    yield count
