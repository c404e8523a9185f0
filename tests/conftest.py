"""Shared fixtures: a private redis-server for the session and a fresh queue per test."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest
import redis

from django_bullq import Queue
from tests.redis_server import RedisServer


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    """A redis-server started by the test session on a free port (never 127.0.0.1:6379)."""
    server = RedisServer().start()
    os.environ["BULLQ_TEST_REDIS_URL"] = server.url
    try:
        yield server
    finally:
        server.cleanup()


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
