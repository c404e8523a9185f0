"""Sample tasks for the Django-layer tests (autodiscovered as ``tests.testapp.tasks``)."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from typing import Any

from asgiref.sync import sync_to_async
from django.db import connection, transaction

from django_bullq import task
from django_bullq.conf import get_connection
from django_bullq.core.errors import UnrecoverableError
from django_bullq.tasks import current_job  # the path docs/cancellation.md gives

from .models import Note


def bump(key: str) -> int:
    """INCR a Redis counter on the test server: how many times a task body ran."""
    return int(get_connection("default").sync_client().incr(key))


@task
def add(a: int, b: int = 0) -> int:
    return a + b


@task(attempts=3, backoff=10, priority=5)
def configured(x: Any) -> Any:
    return x


@task
async def async_add(a: int, b: int) -> int:
    await asyncio.sleep(0)
    return a + b


@task(name="email", raw=True)
def email(data: Any) -> dict[str, Any]:
    """Bound to job name ``email`` as a Node / PyPI BullMQ producer adds it: raw data."""
    job = current_job()
    return {"to": data["to"], "job_id": job.id if job else None}


@task
def count_calls(key: str, seconds: float = 0.0) -> str:
    bump(key)
    time.sleep(seconds)
    return "done"


@task
def always_fails(key: str) -> None:
    bump(key)
    raise RuntimeError("boom")


@task
def give_up() -> None:
    raise UnrecoverableError("not worth retrying")


@task
def create_note(slug: str) -> int:
    return Note.objects.create(slug=slug).pk


@task
def count_notes() -> int:
    return Note.objects.count()


@task
def query_log_size() -> dict[str, Any]:
    """How many queries the thread's connection logged before this job ran (DEBUG=True)."""
    before = len(connection.queries)
    Note.objects.count()
    return {"before": before, "in_atomic_block": connection.in_atomic_block}


@task
def drop_connection_behind_django() -> int:
    """Read, then close the DB-API connection as a server timeout would (case B29)."""
    count = Note.objects.count()
    connection.connection.close()
    return count


@task
def leak_atomic(slug: str) -> None:
    """Enter atomic() without leaving it, poison it, then fail (case B30)."""
    transaction.atomic().__enter__()
    Note.objects.create(slug=slug)
    transaction.set_rollback(True)
    raise RuntimeError("left an open, broken transaction behind")


@task
def swallow_integrity_error(slug: str) -> None:
    """IntegrityError swallowed inside atomic: the classic 'transaction is aborted' (B30)."""
    from django.db import IntegrityError

    with transaction.atomic():
        try:
            with transaction.atomic():
                Note.objects.create(slug=slug)
                Note.objects.create(slug=slug)
        except IntegrityError:
            pass
    raise RuntimeError("job A failed after a database error")


@task
def leave_autocommit_off() -> None:
    transaction.set_autocommit(False)
    Note.objects.create(slug="uncommitted")


@task
def slow_first_call(key: str, seconds: float) -> int:
    """Sleeps ``seconds`` on its first run only; returns how many runs there were (case B10)."""
    calls = bump(key)
    if calls == 1:
        time.sleep(seconds)
    return calls


@task
async def async_count_notes() -> int:
    """The async ORM runs in asgiref's thread; the worker cleans that thread's connections."""
    return await Note.objects.acount()


@task
def process_id(seconds: float = 0.0) -> int:
    """Which worker process ran the job (for ``runworker --processes``)."""
    time.sleep(seconds)
    return os.getpid()


@task
def record_job(key: str) -> str:
    """RPUSH the running job's id onto a Redis list (job scheduler tests, case B16)."""
    job = current_job()
    job_id = job.id if job is not None else ""
    get_connection("default").sync_client().rpush(key, job_id)
    return job_id


@task
def crash_first_call(key: str) -> int:
    """Kills its worker process on the first run (supervisor tests); returns the pid after."""
    if bump(key) == 1:
        os._exit(3)
    return os.getpid()


@task(process=True)
def cpu_in_process(n: int) -> dict[str, int]:
    """CPU-bound work run by ``@task(process=True)`` in a pool process."""
    return {"pid": os.getpid(), "parent": os.getppid(), "total": sum(i * i for i in range(n))}


@task(process=True)
def fails_in_process() -> None:
    raise ValueError("bad input seen in the child")


@task(process=True)
def dies_in_process() -> None:
    """Ends its pool process abruptly, as an OOM kill or a segfault would."""
    os._exit(9)


@task
async def async_thread_ident() -> int:
    """The ident of the thread an ``async def`` task runs in (no ORM)."""
    return threading.get_ident()


@task
def thread_ident() -> int:
    """The ident of the thread a ``def`` task runs in (no ORM)."""
    return threading.get_ident()


@task
async def async_leak_atomic() -> None:
    """Enter atomic() in asgiref's thread (where the async ORM runs) and never leave it."""
    await sync_to_async(lambda: transaction.atomic().__enter__())()
    raise RuntimeError("left an atomic block open in asgiref's thread")


@task
async def async_in_atomic_block() -> bool:
    """Whether asgiref's thread's connection is inside an atomic block."""
    return await sync_to_async(lambda: connection.in_atomic_block)()


@task
async def async_fails() -> None:
    raise RuntimeError("async boom")


def _raise_deeper() -> None:
    raise ValueError("raised in a helper")


@task
def fails_in_a_helper() -> None:
    _raise_deeper()
