"""The transactional outbox: jobs written as database rows, moved to Redis after the commit.

:func:`write` stores an :class:`~django_bullq.models.OutboxJob` in the caller's transaction.
:func:`relay_row` (run by the committing process right after the commit) and :func:`relay`
(run by ``runworker`` every ``BULLQ["OUTBOX"]["POLL_INTERVAL"]`` s) move rows to Redis through
the normal add path.

Exactly once: a row is deleted and its job added in one database transaction of the relay, so
two relays never both add it (the second one skips the row locked by the first where the
database has ``SELECT ... FOR UPDATE SKIP LOCKED``, or deletes nothing and skips it). A relay that
dies after the add but before its commit leaves the row behind; the next relay adds it again
under the same custom job id, which BullMQ ignores as a duplicate.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Any

from django.db import close_old_connections, connections, transaction
from django.utils import timezone

from .conf import bullq_settings, get_queue
from .core.job import Job
from .core.options import JobOptions, now_ms, to_delay_ms
from .core.serialization import dumps, loads

logger = logging.getLogger("django_bullq.outbox")


def new_job_id() -> str:
    """A custom job id for an outbox row: ``ob-<32 hex>`` (valid for BullMQ: no ``:``)."""
    return f"ob-{uuid.uuid4().hex}"


def write(database: str, queue_name: str, name: str, data: Any,
          options: dict[str, Any]) -> Any:
    """Store a job as an outbox row on ``database`` (inside the caller's transaction).

    Args:
        database: database alias. queue_name: resolved queue name. name: job name.
        data: JSON value. options: JobOptions fields; ``delay`` (ms, timedelta or aware
            datetime) is kept as the due time, so time spent in the outbox counts; the job's
            ``timestamp`` is now; ``job_id`` defaults to :func:`new_job_id`.

    Returns:
        The saved :class:`~django_bullq.models.OutboxJob`.

    Raises:
        ValueError / InvalidNameError: bad options. SerializationError: not JSON.
    """
    from .models import OutboxJob

    stored = dict(options)
    stored["job_id"] = stored.get("job_id") or new_job_id()
    now = now_ms()
    delay = stored.pop("delay", None)
    stored.setdefault("timestamp", now)
    JobOptions(**stored).validate()
    if delay is not None:
        stored["due"] = now + to_delay_ms(delay, now)
    return OutboxJob.objects.using(database).create(
        job_id=stored.pop("job_id"), queue=queue_name, name=name,
        data=dumps(data, f"data of job {name!r}"), options=dumps(stored, "outbox job options"),
        created_at=timezone.now())


def push(row: Any) -> Job:
    """Add the row's job to Redis (the normal add path, with the row's custom job id).

    Returns:
        The job (for a duplicate id, BullMQ's existing job).
    """
    options = loads(row.options, {})
    due = options.pop("due", None)
    if due is not None:
        options["delay"] = max(0, int(due) - now_ms())
    return get_queue(row.queue).add(row.name, loads(row.data), job_id=row.job_id, **options)


def relay_row(database: str, pk: int) -> Job | None:
    """Move one row to Redis: delete it and add its job in one transaction of ``database``.

    Returns:
        The job; None when another relay took the row first, or the move failed (logged; the
        row stays for ``runworker``'s relay).
    """
    from .models import OutboxJob

    rows = OutboxJob.objects.using(database)
    if connections[database].features.has_select_for_update_skip_locked:
        rows = rows.select_for_update(skip_locked=True)  # another relay holds it: skip
    try:
        with transaction.atomic(using=database):
            row = rows.filter(pk=pk).first()
            if row is None or not _claim(database, row.pk):
                return None
            return push(row)
    except Exception:  # noqa: BLE001 - the row is kept; the relay retries it
        logger.exception("outbox: job of row %s on database %r not moved to Redis yet", pk,
                         database)
        return None


def _claim(database: str, pk: int) -> bool:
    from .models import OutboxJob

    deleted: int = OutboxJob.objects.using(database).filter(pk=pk).delete()[0]
    return deleted > 0


def relay(database: str, limit: int | None = None) -> int:
    """Move up to ``limit`` rows of ``database``'s outbox to Redis, oldest first.

    Args:
        database: database alias. limit: rows per call (default ``BATCH_SIZE``).

    Returns:
        How many jobs this call added.
    """
    from .models import OutboxJob

    limit = limit or int(bullq_settings.OUTBOX["BATCH_SIZE"])
    pks = list(OutboxJob.objects.using(database).order_by("created_at", "id")
               .values_list("pk", flat=True)[:limit])
    return sum(1 for pk in pks if relay_row(database, pk) is not None)


def relay_all() -> int:
    """One relay pass over every database of ``BULLQ["OUTBOX"]["DATABASES"]``.

    Returns:
        Jobs added. Database errors are logged, never raised (the worker keeps running).
    """
    moved = 0
    for database in bullq_settings.OUTBOX["DATABASES"]:
        try:
            moved += relay(database)
        except Exception:  # noqa: BLE001 - e.g. database down or table not migrated yet
            logger.exception("outbox: relay pass over database %r failed", database)
    close_old_connections()
    return moved


async def arelay_forever(interval: float) -> None:
    """Run :func:`relay_all` in a thread every ``interval`` s until cancelled (``runworker``)."""
    while True:
        await asyncio.to_thread(relay_all)
        await asyncio.sleep(interval)


__all__ = ["arelay_forever", "new_job_id", "push", "relay", "relay_all", "relay_row", "write"]
