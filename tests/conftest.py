"""Shared fixtures: a private redis-server for the session and a fresh queue per test."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
import redis

from django_bullq import Queue
from tests.support.pg_server import PostgresServer
from tests.support.redis_cluster import RedisCluster
from tests.support.redis_server import RedisServer, _External, session_server

#: Test files of the slow tier (faults, topologies, subprocess and build suites): run by
#: ``make test``, left out of ``make test-fast`` (``-m "not slow"``).
SLOW_FILES = frozenset(
    {
        "test_autopipeline_faults.py",
        "test_bench.py",
        "test_worker_hygiene_postgres.py",
        "test_cluster.py",
        "test_sentinel.py",
        "test_connection_faults.py",
        "test_devredis.py",
        "test_drain_batching.py",
        "test_example_project.py",
        "test_fuzz.py",
        "test_outbox_postgres.py",
        "test_packaging.py",
        "test_pytest_pass.py",
        "test_redis_security.py",
        "test_runworker.py",
        "test_soak.py",
        "test_supervisor.py",
        "test_topologies_django.py",
        "test_typing.py",
    }
)
#: Single tests of the slow tier in files that are otherwise fast.
SLOW_TESTS = frozenset(
    {
        "test_closing_a_worker_mid_iteration_100_times_keeps_one_pending_iteration",
    }
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the slow tier, and every browser test (tests/browser/) ``browser``."""
    for item in items:
        path = item.path
        if "browser" in path.parts:
            item.add_marker(pytest.mark.browser)
            item.add_marker(pytest.mark.slow)
        elif path.name in SLOW_FILES or item.originalname in SLOW_TESTS:
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
