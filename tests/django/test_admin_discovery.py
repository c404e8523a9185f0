"""The admin finds queues no setting names by walking Redis' keyspace a bounded number of keys
per page (``core/queue/discovery.py``): a million-key Redis made every overview pay a full SCAN
(1.4 s for the page, every 5 s for its JSON)."""

from __future__ import annotations

import io
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from django.core.management import call_command
from django.test import override_settings
from django.urls import reverse

from django_bullq import queues
from django_bullq.conf import get_config, get_queue
from django_bullq.core.queue import discovery
from tests.support.admin_users import staff_client

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
        queues.known_queue_names()
        first = list(walk)
        assert sum(count for _, count in first) <= 1_000, "one call looks at 1,000 keys at most"
        assert first[0][0] == 0 and first[-1][0] != 0
        walk.clear()
        queues.known_queue_names()
        assert walk[0][0] != 0, "the next call goes on from where the last one stopped"
        for _ in range(20):  # a whole walk of ~5,000 keys takes about 5 calls
            if hidden in queues.known_queue_names():
                break
        assert hidden in queues.known_queue_names()  # found, and kept once found
    finally:
        client.delete(*[f"{junk}:{i}" for i in range(5_000)])
        get_queue(hidden).obliterate(force=True)


def test_a_queue_whose_meta_is_gone_leaves_the_list(walk: list[tuple[int, int]]) -> None:
    name = f"gone-{uuid.uuid4().hex[:6]}"
    get_queue(name).pause()
    for _ in range(20):
        if name in queues.known_queue_names():
            break
    assert name in queues.known_queue_names()

    get_queue(name).obliterate(force=True)

    assert name not in queues.known_queue_names()


def test_queues_only_a_scheduler_or_a_tasks_backend_names_are_listed_before_redis_has_them() -> (
    None
):
    """The admin's overview and the Prometheus exposition list the queues the project declares,
    the same list ``runworker`` checks its names against: a queue named only by a scheduler or
    by a ``django.tasks`` backend is there before any of its keys exists."""
    by_scheduler = f"sched-only-{uuid.uuid4().hex[:8]}"
    by_backend = f"tasks-only-{uuid.uuid4().hex[:8]}"
    bullq = {
        **get_config(),
        "SCHEDULERS": {
            "nightly": {"task": "tests.testapp.tasks.add", "every": 60_000, "queue": by_scheduler}
        },
    }
    tasks = {"default": {"BACKEND": "django_bullq.backends.BullQBackend", "QUEUES": [by_backend]}}
    with override_settings(BULLQ=bullq, TASKS=tasks):
        assert {by_scheduler, by_backend} <= set(queues.known_queue_names())
        page = staff_client(every=True).get(reverse("admin:django_bullq_bullqqueue_changelist"))
        assert by_scheduler in page.content.decode() and by_backend in page.content.decode()
        out = io.StringIO()
        call_command("bullq", "metrics", stdout=out)
        assert f'queue="{by_scheduler}"' in out.getvalue()
        assert f'queue="{by_backend}"' in out.getvalue()
