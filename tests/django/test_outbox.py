"""Transactional enqueue: on-commit per database alias, and the outbox (commit -> runs, rollback
-> never runs, a relay crash -> exactly once), on a real Redis with real workers."""

from __future__ import annotations

import asyncio
import io
import logging
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from django.core.management import call_command
from django.db import transaction

from django_bullq.conf import ConfigurationError, get_queue
from django_bullq.core.job import Job
from django_bullq.models import OutboxJob
from django_bullq.producer.outbox import push
from django_bullq.producer.pending import PendingEnqueue
from django_bullq.producer.relay import relay, relay_all
from django_bullq.worker.group import WorkerGroup, arun_group, build_worker
from tests.support.helpers_django import burst
from tests.support.redis_server import free_port
from tests.testapp import tasks as sample
from tests.testapp.models import Note

BOTH = ["default", "other"]


class SimulatedCrash(Exception):
    """Raised by an on-commit callback registered first: the later ones (the relay) never run,
    as if the process died right after the commit."""


def crash_after_commit(using: str = "default") -> None:
    def crash() -> None:
        raise SimulatedCrash

    transaction.on_commit(crash, using=using)


def enqueue_then_crash(bound: Any, *args: Any, using: str = "default") -> Any:
    """Enqueue inside atomic(using=...); the process 'dies' right after the commit."""
    with pytest.raises(SimulatedCrash), transaction.atomic(using=using):
        crash_after_commit(using)
        pending = bound.enqueue(*args)
    return pending


def runs(queue_name: str, key: str) -> int:
    return int(get_queue(queue_name).client.get(key) or 0)


@pytest.fixture
def outbox(settings: Any) -> Callable[..., None]:
    """Turn the outbox on (``DATABASES`` default: both aliases)."""

    def enable(**extra: Any) -> None:
        settings.BULLQ = {
            **settings.BULLQ,
            "OUTBOX": {"ENABLED": True, "DATABASES": BOTH, "POLL_INTERVAL": 0.1, **extra},
        }

    enable()
    return enable


@pytest.fixture
def key() -> str:
    return f"runs-{uuid.uuid4().hex}"


# --- on commit, per database alias ---------------------------------------------------------


@pytest.mark.django_db(transaction=True, databases=BOTH)
def test_on_commit_waits_for_its_own_database(queue_name: str) -> None:
    bound = sample.add.using(queue=queue_name, database="other")
    with transaction.atomic(using="other"):
        pending = bound.enqueue(1)
        assert isinstance(pending, PendingEnqueue) and not pending.enqueued
        with transaction.atomic(using="default"):
            pass  # a commit on another database does not release it
        assert get_queue(queue_name).count() == 0
    assert pending.job is not None and get_queue(queue_name).count() == 1


@pytest.mark.django_db(transaction=True, databases=BOTH)
def test_atomic_block_on_another_database_does_not_defer(queue_name: str) -> None:
    with transaction.atomic(using="default"):
        job = sample.add.using(queue=queue_name, database="other").enqueue(1)
        assert isinstance(job, Job)
        assert get_queue(queue_name).count() == 1


@pytest.mark.django_db(transaction=True, databases=BOTH)
def test_rollback_of_its_database_drops_it_even_if_another_commits(queue_name: str) -> None:
    with (
        transaction.atomic(using="default"),
        pytest.raises(ZeroDivisionError),
        transaction.atomic(using="other"),
    ):
        pending = sample.add.using(queue=queue_name, database="other").enqueue(1)
        1 / 0  # noqa: B018
    assert pending.job is None and get_queue(queue_name).count() == 0


# --- the outbox ----------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True, databases=BOTH)
def test_outbox_commit_runs_once(outbox: Any, queue_name: str, key: str) -> None:
    with transaction.atomic():
        Note.objects.create(slug="with-job")
        pending = sample.count_calls.using(queue=queue_name).enqueue(key)
        row = OutboxJob.objects.get()
        assert row.queue == queue_name and row.name == sample.count_calls.name
        assert get_queue(queue_name).count() == 0
    assert isinstance(pending, PendingEnqueue) and pending.job is not None
    assert pending.job.id == row.job_id
    assert not OutboxJob.objects.exists()
    burst(queue_name)
    assert pending.job.wait(timeout=5) == "done" and runs(queue_name, key) == 1


@pytest.mark.django_db(transaction=True, databases=BOTH)
def test_outbox_rollback_never_runs(outbox: Any, queue_name: str, key: str) -> None:
    with pytest.raises(ZeroDivisionError), transaction.atomic():
        Note.objects.create(slug="rolled-back")
        pending = sample.count_calls.using(queue=queue_name).enqueue(key)
        1 / 0  # noqa: B018
    assert not OutboxJob.objects.exists() and not Note.objects.exists()
    assert relay_all() == 0
    burst(queue_name)
    assert pending.job is None and get_queue(queue_name).count() == 0
    assert runs(queue_name, key) == 0


@pytest.mark.django_db(transaction=True, databases=BOTH)
def test_crash_after_commit_is_relayed_by_the_worker(
    outbox: Any, queue_name: str, key: str
) -> None:
    with pytest.raises(SimulatedCrash), transaction.atomic():
        crash_after_commit()
        Note.objects.create(slug="committed")
        pending = sample.count_calls.using(queue=queue_name).enqueue(key)
    assert Note.objects.filter(slug="committed").exists()
    assert pending.job is None and OutboxJob.objects.count() == 1
    assert get_queue(queue_name).count() == 0
    burst(queue_name)  # runworker relays the outbox first
    assert not OutboxJob.objects.exists()
    assert runs(queue_name, key) == 1


@pytest.mark.django_db(transaction=True, databases=BOTH)
def test_a_redis_outage_is_one_line_per_outage_not_a_traceback_per_row(
    outbox: Any, settings: Any, queue_name: str, key: str, caplog: pytest.LogCaptureFixture
) -> None:
    # with Redis down, every relay pass (one a second in runworker) logged a full traceback
    # for every row it tried
    for _ in range(3):
        enqueue_then_crash(sample.count_calls.using(queue=queue_name), key)
    up = settings.BULLQ
    settings.BULLQ = {
        **up,
        "CONNECTIONS": {"default": {"URL": f"redis://127.0.0.1:{free_port()}/0"}},
    }
    with caplog.at_level(logging.DEBUG, logger="django_bullq.outbox"):
        assert relay_all() == 0
        assert relay_all() == 0
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1, [r.getMessage() for r in warnings]
    assert warnings[0].exc_info is None
    message = warnings[0].getMessage()
    assert "Redis" in message and "unreachable" in message and "3 rows" in message, message
    assert OutboxJob.objects.count() == 3
    caplog.clear()
    settings.BULLQ = up
    with caplog.at_level(logging.INFO, logger="django_bullq.outbox"):
        assert relay_all() == 3
    assert any("reachable again" in r.getMessage() for r in caplog.records), caplog.records
    assert not OutboxJob.objects.exists()


@pytest.mark.django_db(transaction=True, databases=BOTH)
def test_crash_between_add_and_delete_runs_exactly_once(
    outbox: Any, queue_name: str, key: str
) -> None:
    enqueue_then_crash(sample.count_calls.using(queue=queue_name), key)
    row = OutboxJob.objects.get()
    first = push(row)  # the relay added the job, then died before deleting the row
    assert first.id == row.job_id
    assert relay("default") == 1  # the restarted relay adds it again: a duplicate id
    assert relay("default") == 0
    assert get_queue(queue_name).count() == 1
    burst(queue_name)
    assert runs(queue_name, key) == 1


@pytest.mark.django_db(transaction=True, databases=BOTH)
def test_relayed_job_that_already_ran_is_not_run_again(
    outbox: Any, queue_name: str, key: str
) -> None:
    enqueue_then_crash(sample.count_calls.using(queue=queue_name), key)
    push(OutboxJob.objects.get())
    burst(queue_name)  # the job ran before anyone deleted the row
    assert runs(queue_name, key) == 1
    burst(queue_name)  # relays the row again: BullMQ keeps the finished job, ignores the add
    assert not OutboxJob.objects.exists()
    assert runs(queue_name, key) == 1


@pytest.mark.django_db(transaction=True, databases=BOTH)
def test_outbox_row_lives_in_the_tasks_database(outbox: Any, queue_name: str, key: str) -> None:
    bound = sample.count_calls.using(queue=queue_name, database="other")
    with pytest.raises(SimulatedCrash), transaction.atomic(using="other"):
        crash_after_commit(using="other")
        bound.enqueue(key)
        assert OutboxJob.objects.using("other").count() == 1
        assert not OutboxJob.objects.using("default").exists()
    with pytest.raises(ZeroDivisionError), transaction.atomic(using="other"):
        bound.enqueue(key)
        1 / 0  # noqa: B018
    assert OutboxJob.objects.using("other").count() == 1
    burst(queue_name)
    assert runs(queue_name, key) == 1
    assert not OutboxJob.objects.using("other").exists()


@pytest.mark.django_db(transaction=True, databases=BOTH)
def test_relay_skips_databases_not_listed(outbox: Any, queue_name: str, key: str) -> None:
    outbox(DATABASES=["default"])
    enqueue_then_crash(
        sample.count_calls.using(queue=queue_name, database="other"), key, using="other"
    )
    assert relay_all() == 0
    assert OutboxJob.objects.using("other").count() == 1


@pytest.mark.django_db(transaction=True, databases=BOTH)
def test_outbox_keeps_the_delay_from_the_enqueue(outbox: Any, queue_name: str) -> None:
    enqueue_then_crash(sample.add.using(queue=queue_name, delay=3_600_000), 1)
    row = OutboxJob.objects.get()
    job = push(row)
    assert get_queue(queue_name).get_job_state(job.id) == "delayed"
    stored = get_queue(queue_name).get_job(job.id)
    assert stored is not None and 3_500_000 < stored.delay <= 3_600_000


@pytest.mark.django_db(transaction=True, databases=BOTH)
def test_task_can_opt_out_of_the_outbox(outbox: Any, queue_name: str) -> None:
    with transaction.atomic():
        pending = sample.add.using(queue=queue_name, outbox=False).enqueue(1)
        assert not OutboxJob.objects.exists()
    assert pending.job is not None


@pytest.mark.django_db(transaction=True, databases=BOTH)
def test_outbox_true_needs_the_setting(queue_name: str) -> None:
    with pytest.raises(ConfigurationError, match="ENABLED"), transaction.atomic():
        sample.add.using(queue=queue_name, outbox=True).enqueue(1)


def test_outside_a_transaction_the_outbox_is_not_used(outbox: Any, queue_name: str) -> None:
    assert isinstance(sample.add.using(queue=queue_name).enqueue(1), Job)


@pytest.mark.django_db(transaction=True, databases=BOTH)
def test_running_worker_relays_rows_committed_later(outbox: Any, queue_name: str, key: str) -> None:
    group = WorkerGroup([build_worker(queue_name, drain_delay=0.1)])
    loops: list[asyncio.AbstractEventLoop] = []

    async def main() -> None:
        loops.append(asyncio.get_running_loop())
        await arun_group(group, handle_signals=False)

    worker = threading.Thread(target=asyncio.run, args=(main(),))
    worker.start()
    try:
        enqueue_then_crash(sample.count_calls.using(queue=queue_name), key)
        job_id = OutboxJob.objects.get().job_id
        deadline = time.monotonic() + 10
        while OutboxJob.objects.exists():  # the relay's next pass (POLL_INTERVAL 0.1 s)
            assert time.monotonic() < deadline, "the running worker did not relay the row"
            time.sleep(0.05)
        outcome = get_queue(queue_name).wait_until_finished(job_id, timeout=10)
        assert outcome == ("completed", "done")
    finally:
        while not loops:
            time.sleep(0.01)
        loops[0].call_soon_threadsafe(group.close)
        worker.join(timeout=20)
    assert not worker.is_alive()
    assert runs(queue_name, key) == 1


@pytest.mark.django_db(transaction=True, databases=BOTH)
def test_a_burst_run_relays_a_backlog_larger_than_one_batch(
    outbox: Any, queue_name: str, key: str
) -> None:
    """Trial finding: ``runworker --burst`` relayed one ``BATCH_SIZE`` batch (100 of 150 rows)
    and said nothing of the rest."""
    outbox(BATCH_SIZE=10)
    bound = sample.count_calls.using(queue=queue_name)
    with pytest.raises(SimulatedCrash), transaction.atomic():
        crash_after_commit()  # the rows stay for the relay
        bound.enqueue_many([bound.bind(key) for _ in range(25)])
    assert OutboxJob.objects.count() == 25

    out = io.StringIO()
    call_command("runworker", queue_name, "--burst", stdout=out)

    assert not OutboxJob.objects.exists()
    assert runs(queue_name, key) == 25
    assert "not relayed" not in out.getvalue()


@pytest.mark.django_db(transaction=True, databases=BOTH)
def test_a_burst_run_says_how_many_outbox_rows_it_could_not_relay(
    outbox: Any, queue_name: str, key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from django_bullq.producer import relay as relay_module

    bound = sample.count_calls.using(queue=queue_name)
    with pytest.raises(SimulatedCrash), transaction.atomic():
        crash_after_commit()
        bound.enqueue_many([bound.bind(key) for _ in range(3)])
    monkeypatch.setattr(relay_module, "relay_all", lambda: 0)  # every row fails to relay

    out = io.StringIO()
    call_command("runworker", queue_name, "--burst", stdout=out)

    assert "3 outbox row(s) not relayed" in out.getvalue()
    assert OutboxJob.objects.count() == 3


@pytest.mark.django_db(transaction=True, databases=BOTH)
def test_rows_that_fail_to_relay_do_not_hold_back_the_rows_behind_them(
    outbox: Any, queue_name: str, key: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Trial finding: 10 rows whose data was not JSON at the head of the outbox, BATCH_SIZE 10:
    every pass took the same 10, moved nothing and stopped, so none of the 30 good rows behind
    them was ever relayed (and a running worker logged 110 tracebacks in 12 s)."""
    from django.utils import timezone

    from django_bullq.producer import relay as relay_module

    outbox(BATCH_SIZE=10)
    long_ago = timezone.now() - timezone.timedelta(hours=1)
    OutboxJob.objects.bulk_create(
        OutboxJob(
            job_id=f"bad-{i}",
            queue=queue_name,
            name=sample.count_calls.name,
            data="{not json",
            created_at=long_ago,
        )
        for i in range(10)
    )
    bound = sample.count_calls.using(queue=queue_name)
    with pytest.raises(SimulatedCrash), transaction.atomic():
        crash_after_commit()
        bound.enqueue_many([bound.bind(key) for _ in range(5)])
    out = io.StringIO()
    call_command("runworker", queue_name, "--burst", stdout=out)

    assert runs(queue_name, key) == 5
    assert "10 outbox row(s) not relayed" in out.getvalue()
    assert OutboxJob.objects.count() == 10
    failures = [r for r in caplog.records if "not moved to Redis" in r.getMessage()]
    assert len(failures) == 10  # once each, then held for relay.HOLD_S
    assert len(relay_module._held.pks("default")) == 10
