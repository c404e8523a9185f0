"""Shared fixtures: a private redis-server for the session and a fresh queue per test."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
import redis

from django_bullq import Queue
from tests.pg_server import PostgresServer
from tests.redis_cluster import RedisCluster
from tests.redis_server import RedisServer, _External, session_server


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
