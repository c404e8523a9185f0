"""The transactional outbox: writes to Redis stored as database rows, moved after the commit.

A row (:class:`~django_bullq.models.OutboxJob`) is one write of a kind: a job (:func:`write`),
a flow (:func:`write_flow`) or a job scheduler upsert (:func:`write_scheduler`), stored in the
caller's transaction. :func:`relay_row` (run by the committing process right after the commit)
and :func:`~django_bullq.producer.relay.relay` (run by ``runworker`` every
``BULLQ["OUTBOX"]["POLL_INTERVAL"]`` s) move rows to Redis through the normal paths
(:func:`push`: ``Queue.add``, ``FlowProducer.add``, ``Queue.upsert_job_scheduler``).

Exactly once: a row is deleted and its job added in one database transaction of the relay, so
two relays never both add it (the second one skips the row locked by the first where the
database has ``SELECT ... FOR UPDATE SKIP LOCKED``, or deletes nothing and skips it). A relay that
dies after the add but before its commit leaves the row behind; the next relay adds it again
under the same custom job id, which BullMQ ignores as a duplicate. A flow row holds an id for
every node, so a second add of it is a duplicate too (each node is re-attached to its parent,
BullMQ's ``duplicated``); a scheduler upsert is idempotent by itself.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any

from django.db import connections, transaction
from django.utils import timezone

from .. import telemetry
from ..conf import get_queue
from ..core.clients import UNREACHABLE_ERRORS
from ..core.flow import FlowProducer, FlowTree
from ..core.options import JobOptions, now_ms, to_delay_ms
from ..core.serialization import Encoded, data_text, dumps, loads

logger = logging.getLogger("django_bullq.outbox")

#: What a write meets when Redis cannot be reached (``RedisUnavailableError`` is the first).
_UNREACHABLE = UNREACHABLE_ERRORS

#: ``OutboxJob.kind`` of each write.
KIND_JOB, KIND_FLOW, KIND_SCHEDULER = "job", "flow", "scheduler"


def new_job_id() -> str:
    """A custom job id for an outbox row: ``ob-<32 hex>`` (valid for BullMQ: no ``:``)."""
    return f"ob-{uuid.uuid4().hex}"


def write(database: str, queue_name: str, name: str, data: Any, options: dict[str, Any]) -> Any:
    """Store a job as an outbox row on ``database`` (inside the caller's transaction).

    Args:
        database: database alias. queue_name: resolved queue name. name: job name.
        data: JSON value (or an :class:`~django_bullq.core.serialization.Encoded` one).
            options: JobOptions fields; ``delay`` (ms, timedelta or aware datetime) is kept
            as the due time, so time spent in the outbox counts; the job's ``timestamp`` is now;
            ``job_id`` defaults to :func:`new_job_id`.

    Returns:
        The saved :class:`~django_bullq.models.OutboxJob`.

    Raises:
        ValueError: bad options (InvalidNameError for a bad name). SerializationError: not
            JSON.
    """
    row = job_row(queue_name, name, data, options)
    row.save(using=database, force_insert=True)
    return row


def write_many(database: str, rows: list[Any]) -> list[int]:
    """Store :func:`job_row` rows on ``database`` in one ``bulk_create`` (inside the caller's
    transaction); their pks, in order."""
    from ..models import OutboxJob

    return [row.pk for row in OutboxJob.objects.using(database).bulk_create(rows)]


def job_row(queue_name: str, name: str, data: Any, options: dict[str, Any]) -> Any:
    """An unsaved :class:`~django_bullq.models.OutboxJob` of kind job (see :func:`write`)."""
    from ..models import OutboxJob

    stored = telemetry.carry_context(dict(options))  # BULLQ["TELEMETRY"]: the request's trace
    stored["job_id"] = stored.get("job_id") or new_job_id()
    now = now_ms()
    delay = stored.pop("delay", None)
    stored.setdefault("timestamp", now)
    JobOptions(**stored).validate()
    if delay is not None:
        stored["due"] = now + to_delay_ms(delay, now)
    return OutboxJob(
        job_id=stored.pop("job_id"),
        queue=queue_name,
        name=name,
        data=data_text(data, f"data of job {name!r}")[1],
        options=dumps(stored, "outbox job options"),
        created_at=timezone.now(),
    )


def write_flow(database: str, tree: FlowTree) -> Any:
    """Store a flow as an outbox row on ``database`` (inside the caller's transaction).

    Args:
        database: database alias. tree: a flow tree (docs/flows.md) whose every node has
            ``opts`` as a dict with a ``job_id``
            (:func:`django_bullq.producer.flows.with_job_ids`), so that adding the row twice
            adds the flow once; a node's ``delay`` is kept as its due time.

    Returns:
        The saved :class:`~django_bullq.models.OutboxJob` (kind ``flow``; ``job_id`` and
        ``queue`` are the root's).

    Raises:
        ValueError: a node without ``job_id``. SerializationError: not JSON.
    """
    from ..models import OutboxJob

    stored = _freeze(tree, now_ms())
    root_opts = stored["opts"]
    return OutboxJob.objects.using(database).create(
        kind=KIND_FLOW,
        job_id=root_opts["job_id"],
        queue=stored["queue_name"],
        name=stored["name"],
        data=dumps(stored, f"flow {stored['name']!r}"),
        created_at=timezone.now(),
    )


def write_scheduler(
    database: str,
    queue_name: str,
    scheduler_id: str,
    repeat: dict[str, Any],
    template: dict[str, Any],
) -> Any:
    """Store a job scheduler upsert as an outbox row on ``database`` (caller's transaction).

    Args:
        database: database alias. queue_name: resolved queue name. scheduler_id: the id.
        repeat: as ``Queue.upsert_job_scheduler`` takes it, and template too; ``start_date``
            / ``end_date`` datetimes (aware) are stored as ms since the epoch.

    Returns:
        The saved :class:`~django_bullq.models.OutboxJob` (kind ``scheduler``; ``name`` is the
        scheduler id, ``data`` the template, ``options`` the repeat options, ``job_id`` a
        unique row token from :func:`new_job_id`).

    Raises:
        SerializationError: not JSON. ValueError: a naive datetime.
    """
    from ..models import OutboxJob

    stored = {
        key: _epoch_ms(value, key) if isinstance(value, datetime) else value
        for key, value in repeat.items()
    }
    return OutboxJob.objects.using(database).create(
        kind=KIND_SCHEDULER,
        job_id=new_job_id(),
        queue=queue_name,
        name=scheduler_id,
        data=dumps(template, f"template of scheduler {scheduler_id!r}"),
        options=dumps(stored, f"repeat options of scheduler {scheduler_id!r}"),
        created_at=timezone.now(),
    )


def push(row: Any) -> Any:
    """Do the row's write in Redis (the normal paths, with the row's custom job ids).

    Returns:
        kind job: the :class:`Job` (for a duplicate id, BullMQ's existing job); flow: the
        root :class:`~django_bullq.core.flow.JobNode`; scheduler: the pending iteration's
        Job, or None when the schedule is already over.
    """
    if row.kind == KIND_FLOW:
        tree = _thaw(loads(row.data), now_ms())
        return FlowProducer.for_queue(get_queue(row.queue)).add(tree)
    if row.kind == KIND_SCHEDULER:
        return get_queue(row.queue).upsert_job_scheduler(
            row.name, loads(row.options, {}), loads(row.data)
        )
    return get_queue(row.queue).add(row.name, _stored_data(row), **_job_options(row))


def _stored_data(row: Any) -> Encoded:
    """The data of a job row, with the JSON text stored (the queue does not encode it again)."""
    return Encoded(loads(row.data), row.data)


def _job_options(row: Any) -> dict[str, Any]:
    """The JobOptions fields of a job row: its custom id, a due time back to a delay."""
    options: dict[str, Any] = loads(row.options, {})
    due = options.pop("due", None)
    if due is not None:
        options["delay"] = max(0, int(due) - now_ms())
    return {**options, "job_id": row.job_id}


def relay_jobs(
    database: str, pks: list[int], chunk_size: int, on_moved: Callable[[list[Any]], None]
) -> bool:
    """Move job rows of one queue to Redis in bulk: delete them and add their jobs
    (``Queue.add_bulk``, ``chunk_size`` per round trip) in one transaction of ``database``.

    Args:
        database: database alias. pks: the rows (kind job, one queue). chunk_size: jobs per
            write. on_moved: called with the added jobs, in the order of ``pks``, once the move
            committed.

    Returns:
        True when this call moved them all; False when another relay took one of them first
        (nothing is moved: the relay moves the rest) or the move failed (logged; the rows stay
        for ``runworker``'s relay).
    """
    from ..models import OutboxJob

    rows = OutboxJob.objects.using(database)
    if connections[database].features.has_select_for_update_skip_locked:
        rows = rows.select_for_update(skip_locked=True)
    try:
        with transaction.atomic(using=database):
            found = {row.pk: row for row in rows.filter(pk__in=pks)}
            if len(found) != len(pks):
                return False
            deleted = OutboxJob.objects.using(database).filter(pk__in=pks).delete()[0]
            if deleted != len(pks):  # another relay took one meanwhile: undo this delete
                transaction.set_rollback(True, using=database)
                return False
            ordered = [found[pk] for pk in pks]
            jobs = get_queue(ordered[0].queue).add_bulk(
                [(row.name, _stored_data(row), _job_options(row)) for row in ordered],
                chunk_size=chunk_size,
            )
    except _UNREACHABLE as exc:
        logger.warning(
            "outbox: %s rows on database %r wait for Redis (runworker's relay moves them): %s",
            len(pks),
            database,
            exc,
        )
        return False
    except Exception:
        logger.exception(
            "outbox: %s rows on database %r not moved to Redis yet", len(pks), database
        )
        return False
    on_moved(jobs)
    return True


def relay_row(database: str, pk: int, on_moved: Callable[[Any], None] | None = None) -> bool:
    """Move one row to Redis: delete it and do its write in one transaction of ``database``.

    Args:
        database: database alias. pk: the row. on_moved: called with :func:`push`'s result
            once the move committed.

    Returns:
        True when this call moved it; False when another relay took the row first, or the
        move failed (logged; the row stays for ``runworker``'s relay).
    """
    try:
        return _move_row(database, pk, on_moved)
    except _UNREACHABLE as exc:
        logger.warning(
            "outbox: row %s on database %r waits for Redis (runworker's relay moves it): %s",
            pk,
            database,
            exc,
        )
    except Exception:
        logger.exception(
            "outbox: write of row %s on database %r not moved to Redis yet", pk, database
        )
    return False


def _move_row(database: str, pk: int, on_moved: Callable[[Any], None] | None) -> bool:
    """:func:`relay_row`'s move; raises what the move raised (the transaction rolled back)."""
    from ..models import OutboxJob

    rows = OutboxJob.objects.using(database)
    if connections[database].features.has_select_for_update_skip_locked:
        rows = rows.select_for_update(skip_locked=True)  # another relay holds it: skip
    with transaction.atomic(using=database):
        row = rows.filter(pk=pk).first()
        if row is None or not _claim(database, row.pk):
            return False
        moved = push(row)
    if on_moved is not None:
        on_moved(moved)
    return True


def _claim(database: str, pk: int) -> bool:
    from ..models import OutboxJob

    deleted: int = OutboxJob.objects.using(database).filter(pk=pk).delete()[0]
    return deleted > 0


def _freeze(node: FlowTree, now: int) -> dict[str, Any]:
    """A flow node as stored: opts a plain dict, ``delay`` replaced by ``due`` (ms since the
    epoch), ``timestamp`` now, children likewise."""
    opts = dict(node.get("opts") or {})
    if not opts.get("job_id"):
        raise ValueError(
            f"flow node {node.get('name')!r}: an outbox flow needs a job_id on every node"
        )
    delay = opts.pop("delay", None)
    if delay is not None:
        opts["due"] = now + to_delay_ms(delay, now)
    opts.setdefault("timestamp", now)
    return {
        **node,
        "opts": opts,
        "children": [_freeze(child, now) for child in node.get("children") or []],
    }


def _thaw(node: dict[str, Any], now: int) -> FlowTree:
    opts = dict(node.get("opts") or {})
    due = opts.pop("due", None)
    if due is not None:
        opts["delay"] = max(0, int(due) - now)
    return {
        **node,
        "opts": opts,
        "children": [_thaw(child, now) for child in node.get("children") or []],
    }


def _epoch_ms(value: datetime, what: str) -> int:
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"{what}: a naive datetime is ambiguous: pass an aware datetime")
    return int(round(value.timestamp() * 1000))


__all__ = [
    "KIND_FLOW",
    "KIND_JOB",
    "KIND_SCHEDULER",
    "job_row",
    "new_job_id",
    "push",
    "relay_jobs",
    "relay_row",
    "write",
    "write_many",
    "write_flow",
    "write_scheduler",
]
