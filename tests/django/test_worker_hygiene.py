"""Cases B29 and B30: a job never inherits a dead DB connection or a leaked transaction."""

from __future__ import annotations

import gc
import threading
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


@pytest.fixture
def unseen_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    """Forget which threads hygiene knows to be clean (a new thread may reuse an old ident)."""
    monkeypatch.setattr(hygiene, "_clean_threads", set())
    monkeypatch.setattr(hygiene, "_async_thread", None)


def record_cleanups(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []
    monkeypatch.setattr(hygiene, "close_old_connections", lambda: calls.append("close"))
    monkeypatch.setattr(hygiene, "reset_queries", lambda: calls.append("reset"))
    return calls


@pytest.mark.usefixtures("unseen_threads")
def test_case_b29_hooks_run_before_and_after_every_job_holding_a_connection(
    monkeypatch: pytest.MonkeyPatch, queue_name: str
) -> None:
    calls = record_cleanups(monkeypatch)  # the connection is never closed: it stays open
    jobs = [sample.count_notes.using(queue=queue_name).enqueue() for _ in range(3)]
    burst(queue_name)
    assert [j.wait(timeout=1) for j in jobs] == [0, 0, 0]
    assert calls == ["reset", "close", "reset", "close"] * 3


@pytest.mark.usefixtures("unseen_threads")
def test_jobs_without_a_connection_skip_the_hygiene(
    monkeypatch: pytest.MonkeyPatch, queue_name: str
) -> None:
    calls = record_cleanups(monkeypatch)
    jobs = [sample.add.using(queue=queue_name).enqueue(i) for i in range(3)]
    burst(queue_name)
    assert [j.wait(timeout=1) for j in jobs] == [0, 1, 2]
    # Only around the first job: the thread was never seen; after it, it is known clean.
    assert calls == ["reset", "close", "reset", "close"]


@pytest.mark.usefixtures("unseen_threads")
def test_a_job_opening_a_connection_in_a_clean_thread_is_cleaned_after(
    queue_name: str,
) -> None:
    first = sample.add.using(queue=queue_name).enqueue(1)
    db = sample.count_notes.using(queue=queue_name).enqueue()
    burst(queue_name)
    assert first.wait(timeout=1) == 1
    assert db.wait(timeout=1) == 0
    # CONN_MAX_AGE = 0: the hygiene after the job closed its connection; the thread is clean.
    assert len(hygiene._clean_threads) == 1


@pytest.mark.usefixtures("unseen_threads")
def test_conn_max_age_keeps_the_connection_and_the_hygiene(
    monkeypatch: pytest.MonkeyPatch, queue_name: str
) -> None:
    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", None)
    monkeypatch.setitem(connection.settings_dict, "CONN_HEALTH_CHECKS", value=True)
    closes: list[int] = []
    original = hygiene.close_old_connections
    monkeypatch.setattr(hygiene, "close_old_connections", lambda: (closes.append(1), original()))
    jobs = [sample.count_notes.using(queue=queue_name).enqueue() for _ in range(2)]
    jobs += [sample.add.using(queue=queue_name).enqueue(i) for i in range(2)]
    burst(queue_name)
    assert [j.wait(timeout=1) for j in jobs] == [0, 0, 0, 1]
    # The persistent connection stays open, so every job is preceded and followed by the check.
    assert len(closes) == 8
    assert not hygiene._clean_threads


@pytest.mark.usefixtures("unseen_threads")
def test_async_task_without_a_connection_runs_on_the_loop_without_a_hop(
    monkeypatch: pytest.MonkeyPatch, queue_name: str
) -> None:
    hops: list[tuple[str, int]] = []
    for name in ("clean_before", "clean_after"):
        original = getattr(hygiene, name)

        def spy(*args: Any, _name: str = name, _original: Any = original) -> None:
            hops.append((_name, threading.get_ident()))
            _original(*args)

        monkeypatch.setattr(hygiene, name, spy)
    jobs = [sample.async_thread_ident.using(queue=queue_name).enqueue() for _ in range(4)]
    burst(queue_name)
    loop_thread = threading.get_ident()  # burst runs the worker's loop in this thread
    assert [j.wait(timeout=1) for j in jobs] == [loop_thread] * 4
    # One hop there and back for the first job (asgiref's thread was never seen), then none.
    assert [name for name, _ in hops] == ["clean_before", "clean_after"]
    assert all(ident != loop_thread for _, ident in hops)
    assert not hygiene.async_thread_needs_hygiene()


@pytest.mark.usefixtures("unseen_threads")
def test_async_task_using_the_orm_gets_the_hygiene_in_asgiref_thread(
    monkeypatch: pytest.MonkeyPatch, queue_name: str
) -> None:
    afters: list[int] = []
    original = hygiene.clean_after

    def spy(job: Any = None) -> None:
        afters.append(threading.get_ident())
        original(job)

    monkeypatch.setattr(hygiene, "clean_after", spy)
    Note.objects.create(slug="one")
    first = sample.async_thread_ident.using(queue=queue_name).enqueue()
    orm = [sample.async_count_notes.using(queue=queue_name).enqueue() for _ in range(3)]
    burst(queue_name)
    assert first.wait(timeout=1) == threading.get_ident()
    assert [j.wait(timeout=1) for j in orm] == [1, 1, 1]
    # Once for the first job (thread unseen), then after each job that opened a connection.
    assert len(afters) == 4
    assert len(set(afters)) == 1 and afters[0] != threading.get_ident()
    assert not hygiene.async_thread_needs_hygiene()  # CONN_MAX_AGE = 0: closed after each


@pytest.mark.usefixtures("unseen_threads")
def test_async_task_leaking_an_atomic_block_is_rolled_back_in_asgiref_thread(
    queue_name: str,
) -> None:
    skip_first = sample.async_thread_ident.using(queue=queue_name).enqueue()  # thread now clean
    bad = sample.async_leak_atomic.using(queue=queue_name).enqueue()
    probe = sample.async_in_atomic_block.using(queue=queue_name).enqueue()
    burst(queue_name)
    assert skip_first.wait(timeout=1) == threading.get_ident()
    assert bad.refresh().failed_reason == "left an atomic block open in asgiref's thread"
    assert probe.wait(timeout=1) is False


@pytest.mark.usefixtures("unseen_threads")
def test_sync_tasks_run_in_worker_threads_with_current_job(queue_name: str) -> None:
    ident = sample.thread_ident.using(queue=queue_name).enqueue()
    email = sample.email.using(queue=queue_name).enqueue({"to": "t@example.com"})
    burst(queue_name)
    assert ident.wait(timeout=1) != threading.get_ident()
    assert email.wait(timeout=1)["job_id"] == email.id


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


# --- in_flight: the sync jobs still running, by queue (runworker's shutdown) -----------------


def test_in_flight_counts_the_running_sync_jobs_of_each_queue() -> None:
    """Each job thread's running job counts for its queue until after_job; threads of two
    queues at once, and a job without a queue, are told apart."""
    from django_bullq.core.job import Job

    started, release = threading.Barrier(4), threading.Event()

    def run(queue_name: str | None) -> None:
        job = Job(queue=get_queue(queue_name) if queue_name else None, id="1", name="n")
        hygiene.before_job(job)
        started.wait(5)
        release.wait(5)
        hygiene.after_job(job)

    names = ["hyg-a", "hyg-a", "hyg-b"]
    threads = [threading.Thread(target=run, args=(name,)) for name in names]
    for thread in threads:
        thread.start()
    started.wait(5)
    try:
        assert hygiene.in_flight(["hyg-a"]) == 2
        assert hygiene.in_flight(["hyg-b", "hyg-c"]) == 1
        assert hygiene.in_flight() >= 3
    finally:
        release.set()
        for thread in threads:
            thread.join(5)
    assert hygiene.in_flight(["hyg-a", "hyg-b"]) == 0
