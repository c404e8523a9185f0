"""The admin finds queues no setting names by walking Redis' keyspace a bounded number of keys
per page (``admin/discovery.py``): a million-key Redis made every overview pay a full SCAN
(1.4 s for the page, every 5 s for its JSON)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from django_bullq.admin import data, discovery
from django_bullq.conf import get_queue

pytestmark = pytest.mark.django_db


@pytest.fixture
def walk(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[int, int]]]:
    """A small walk (1,000 keys a call, 100 a SCAN step); yields ``(cursor, COUNT)`` of every
    SCAN step taken."""
    discovery.forget()
    monkeypatch.setattr(discovery, "KEYS_PER_CALL", 1_000)
    monkeypatch.setattr(discovery, "SCAN_STEP", 100)
    steps: list[tuple[int, int]] = []
    real = redis.Redis.scan

    def counted(self: redis.Redis, cursor: int = 0, **kwargs: Any) -> Any:
        steps.append((int(cursor), int(kwargs.get("count") or 0)))
        return real(self, cursor, **kwargs)

    monkeypatch.setattr(redis.Redis, "scan", counted)
    yield steps
    discovery.forget()


def test_a_call_walks_a_bounded_number_of_keys_and_the_next_goes_on(
    walk: list[tuple[int, int]],
) -> None:
    client = get_queue("default").client
    junk = f"junk-{uuid.uuid4().hex[:6]}"
    client.mset({f"{junk}:{i}": 1 for i in range(5_000)})  # a keyspace bigger than one call
    hidden = f"found-{uuid.uuid4().hex[:6]}"
    get_queue(hidden).pause()  # writes its meta
    try:
        data.known_queue_names()
        first = list(walk)
        assert sum(count for _, count in first) <= 1_000, "one call looks at 1,000 keys at most"
        assert first[0][0] == 0 and first[-1][0] != 0
        walk.clear()
        data.known_queue_names()
        assert walk[0][0] != 0, "the next call goes on from where the last one stopped"
        for _ in range(20):  # a whole walk of ~5,000 keys takes about 5 calls
            if hidden in data.known_queue_names():
                break
        assert hidden in data.known_queue_names()  # found, and kept once found
    finally:
        client.delete(*[f"{junk}:{i}" for i in range(5_000)])
        get_queue(hidden).obliterate(force=True)


def test_a_queue_whose_meta_is_gone_leaves_the_list(walk: list[tuple[int, int]]) -> None:
    name = f"gone-{uuid.uuid4().hex[:6]}"
    get_queue(name).pause()
    for _ in range(20):
        if name in data.known_queue_names():
            break
    assert name in data.known_queue_names()

    get_queue(name).obliterate(force=True)

    assert name not in data.known_queue_names()
