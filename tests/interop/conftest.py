"""Fixtures of the interop tests: the Node scripts bound to the test's Redis and queue."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.interop.helpers import Node, require_node_bullmq


@pytest.fixture
def node(redis_url: str, queue_name: str) -> Iterator[Node]:
    """Runs ``tests/interop/node/*.mjs`` against this test's queue (fails if bullmq is missing)."""
    runner = Node(require_node_bullmq(), redis_url, queue_name)
    yield runner
    runner.close()
