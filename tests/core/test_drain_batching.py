"""Issue 12 item 3: drain(delayed=True) of 150,000 jobs runs in batches, and no single Redis
call takes over 100 ms (the acceptance bound, read from Redis' SLOWLOG, not a wall clock).
A million jobs: by hand with ``python -m tests.support.drain_latency --jobs 1000000``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from django_bullq import Queue
from tests.support.drain_latency import measure_drain
from tests.support.redis_server import RedisServer

JOBS = 150_000


@pytest.fixture(scope="module")
def private_server() -> Iterator[RedisServer]:
    """A redis-server of its own: the test changes SLOWLOG settings and fills memory."""
    server = RedisServer().start()
    yield server
    server.stop()


def test_drain_of_150k_jobs_has_no_call_over_100_ms(private_server: RedisServer) -> None:
    queue = Queue("drain-150k", private_server.url)
    try:
        figures = measure_drain(queue, private_server.url, JOBS)
        assert figures.removed == JOBS
        assert figures.script_calls >= JOBS // 1000  # batched, not one call
        assert figures.longest_call_ms < 100, figures
        assert queue.get_job_counts("waiting", "prioritized", "delayed") == {
            "waiting": 0,
            "prioritized": 0,
            "delayed": 0,
        }
        assert (
            queue.client.exists(queue.keys.job("1"), queue.keys.job(str(JOBS)), queue.keys["pc"])
            == 0
        )
    finally:
        queue.close()
