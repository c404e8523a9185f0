"""Cases B29 and B30: a job never inherits a dead DB connection or a leaked transaction."""

from __future__ import annotations

import gc
import uuid
from typing import Any

import pytest
from django.db import connection

from django_bullq.conf import get_queue, worker_options
from django_bullq.core.worker import Worker
from django_bullq.worker import hygiene
from django_bullq.worker.dispatch import process_job
from tests.support.helpers_django import burst
from tests.testapp import tasks as sample
from tests.testapp.models import Note

pytestmark = pytest.mark.django_db(transaction=True)


def burst_without_hooks(queue_name: str) -> None:
    """The control: the same dispatcher without the Django hooks."""
    Worker(get_queue(queue_name), process_job, worker_options(drain_delay=0.2)).run(
        burst=True, handle_signals=False
    )
    # The job threads are gone; free their connections (and what they left open) now.
    gc.collect()


# --- B29 -----------------------------------------------------------------------------------


def test_case_b29_hooks_run_before_and_after_every_job(
    monkeypatch: pytest.MonkeyPatch, queue_name: str
) -> None:
    calls: list[str] = []
    monkeypatch.setattr(hygiene, "close_old_connections", lambda: calls.append("close"))
    monkeypatch.setattr(hygiene, "reset_queries", lambda: calls.append("reset"))
    jobs = [sample.add.using(queue=queue_name).enqueue(i) for i in range(3)]
    burst(queue_name)
    assert [j.wait(timeout=1) for j in jobs] == [0, 1, 2]
    assert calls == ["reset", "close", "reset", "close"] * 3


def test_case_b29_connection_closed_by_the_server_does_not_break_the_next_job(
    queue_name: str,
) -> None:
    Note.objects.create(slug="existing")
    first = sample.drop_connection_behind_django.using(queue=queue_name).enqueue()
    second = sample.count_notes.using(queue=queue_name).enqueue()
    burst(queue_name)
    assert first.wait(timeout=1) == 1
    assert second.wait(timeout=1) == 1


def test_case_b29_control_without_hooks_the_next_job_fails(queue_name: str) -> None:
    sample.drop_connection_behind_django.using(queue=queue_name).enqueue()
    second = sample.count_notes.using(queue=queue_name).enqueue()
    burst_without_hooks(queue_name)
    assert "closed database" in (second.refresh().failed_reason or "")


def test_case_b29_query_log_is_reset_between_jobs(settings: Any, queue_name: str) -> None:
    settings.DEBUG = True  # the query log only grows with DEBUG=True
    jobs = [sample.query_log_size.using(queue=queue_name).enqueue() for _ in range(50)]
    burst(queue_name)
    assert {j.wait(timeout=1)["before"] for j in jobs} == {0}


# --- B30 -----------------------------------------------------------------------------------


def test_case_b30_leaked_atomic_block_is_rolled_back(queue_name: str) -> None:
    bad = sample.leak_atomic.using(queue=queue_name).enqueue("from-a")
    probe = sample.query_log_size.using(queue=queue_name).enqueue()
    write = sample.create_note.using(queue=queue_name).enqueue("from-b")
    burst(queue_name)
    assert probe.wait(timeout=1)["in_atomic_block"] is False
    assert write.wait(timeout=1)
    bad.refresh()
    assert bad.failed_reason == "left an open, broken transaction behind"
    assert "RuntimeError" in bad.stacktrace[-1]
    assert list(Note.objects.values_list("slug", flat=True)) == ["from-b"]


def test_case_b30_control_without_hooks_the_next_job_fails(queue_name: str) -> None:
    sample.leak_atomic.using(queue=queue_name).enqueue("from-a")
    probe = sample.count_notes.using(queue=queue_name).enqueue()
    burst_without_hooks(queue_name)
    assert "atomic" in (probe.refresh().failed_reason or "")


def test_case_b30_swallowed_integrity_error(queue_name: str) -> None:
    bad = sample.swallow_integrity_error.using(queue=queue_name).enqueue("dup")
    after = sample.count_notes.using(queue=queue_name).enqueue()
    burst(queue_name)
    assert bad.refresh().failed_reason == "job A failed after a database error"
    assert after.wait(timeout=1) == 0


def test_case_b30_autocommit_left_off(queue_name: str) -> None:
    sample.leave_autocommit_off.using(queue=queue_name).enqueue()
    write = sample.create_note.using(queue=queue_name).enqueue("committed")
    burst(queue_name)
    assert write.wait(timeout=1)
    assert list(Note.objects.values_list("slug", flat=True)) == ["committed"]


def test_case_b30_with_several_threads(queue_name: str) -> None:
    bound_bad = sample.leak_atomic.using(queue=queue_name)
    bound_ok = sample.create_note.using(queue=queue_name)
    bad, good = [], []
    for i in range(4):
        bad.append(bound_bad.enqueue(f"bad-{i}-{uuid.uuid4().hex[:6]}"))
        good += [bound_ok.enqueue(f"ok-{i}-{n}") for n in range(3)]
    burst(queue_name, concurrency=3)
    assert all(j.wait(timeout=5) for j in good)
    assert all(j.refresh().get_state() == "failed" for j in bad)
    assert Note.objects.count() == 12
    assert not Note.objects.filter(slug__startswith="bad-").exists()
    assert connection.in_atomic_block is False
