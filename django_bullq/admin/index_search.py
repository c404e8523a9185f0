"""The filter over the job index (:class:`~django_bullq.models.JobRecord`): finished jobs in SQL.

``name`` and the time range (``finished_on``) use the b-tree indexes ``(queue, state, name,
finished_on)`` and ``(queue, state, finished_on)``; ``q`` is a ``LIKE '%text%'`` on the
case-folded ``text`` column (a ``pg_trgm`` GIN index on PostgreSQL when the extension could be
created); a JSON path is compared with a key transform, on PostgreSQL also as a ``@>``
containment the GIN ``jsonb_path_ops`` index answers (key paths without list indexes). A page's
rows are then read from Redis (one ``HGETALL`` each) so the table shows the jobs as they are
now; a row whose job Redis no longer holds is drawn from the index and listed in ``gone``.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from django.db import connections
from django.db.models import F, Q, QuerySet
from django.db.models.fields.json import HasKey, KeyTransform

from ..conf import bullq_settings
from ..core.job import Job
from .scan import Walk
from .search import JobFilter

if TYPE_CHECKING:
    from ..core.queue import Queue
    from ..models import JobRecord

#: Matches counted at most for a page's "N matches" (a count beyond is "more than N").
COUNT_LIMIT = 10_000


def enabled() -> bool:
    """True when ``BULLQ["JOB_INDEX"]["ENABLED"]`` is on."""
    return bool(bullq_settings.JOB_INDEX["ENABLED"])


def records(queue: Queue, state: str, flt: JobFilter) -> QuerySet[JobRecord]:
    """The index rows of ``queue`` in ``state`` passing ``flt``, newest finish first."""
    from ..models import JobRecord

    database = str(bullq_settings.JOB_INDEX["DATABASE"])
    rows = JobRecord.objects.using(database).filter(queue=queue.name, state=state)
    if flt.name:
        rows = rows.filter(name=flt.name)
    if flt.since_ms is not None:
        rows = rows.filter(finished_on__gte=flt.since_ms)
    if flt.until_ms is not None:
        rows = rows.filter(finished_on__lte=flt.until_ms)
    if flt.text:
        rows = rows.filter(text__contains=flt.text.casefold())
    if flt.path:
        rows = rows.filter(_path_condition(flt, connections[database].vendor))
    return rows.order_by("-finished_on", "-pk")


def _path_condition(flt: JobFilter, vendor: str) -> Q:
    """The JSON path part of the query: "has the key" without a value, else the value at the
    path equals it (and, on PostgreSQL without list indexes, the ``@>`` containment too)."""
    *parents, last = flt.path
    inner: Any = F("data")
    for segment in parents:
        inner = KeyTransform(segment, inner)
    if not flt.has_value:
        return Q(HasKey(inner, last))
    at = KeyTransform(last, inner)
    exact = Q(at.get_lookup("exact")(at, flt.value))
    if vendor == "postgresql" and not any(s.isdigit() for s in flt.path):
        nested: Any = flt.value
        for segment in reversed(flt.path):
            nested = {segment: nested}
        return Q(data__contains=nested) & exact  # the GIN index answers the containment
    return exact


def find(queue: Queue, state: str, flt: JobFilter, *, cursor: int = 0, want: int = 50) -> Walk:
    """A page of matches from the index: ``want`` rows from offset ``cursor``.

    Returns:
        A :class:`~django_bullq.admin.scan.Walk` with ``source="index"``; ``total`` is the
        matches counted (at most :data:`COUNT_LIMIT` + 1), ``cursor`` the next offset or None.
    """
    rows = records(queue, state, flt)
    page = list(rows[cursor : cursor + want + 1])
    more = len(page) > want
    page = page[:want]
    total = rows.values("pk")[: COUNT_LIMIT + 1].count()
    jobs, gone = _jobs(queue, page)
    return Walk(
        jobs=jobs,
        scanned=len(page),
        total=total,
        start=cursor,
        cursor=cursor + want if more else None,
        source="index",
        gone=gone,
    )


def matching_ids(queue: Queue, state: str, flt: JobFilter, limit: int) -> list[str]:
    """The job ids of the matching rows, newest finish first, at most ``limit``."""
    return list(records(queue, state, flt).values_list("job_id", flat=True)[:limit])


def count(queue: Queue, state: str, flt: JobFilter) -> int:
    """How many rows match."""
    return records(queue, state, flt).count()


def _jobs(queue: Queue, page: list[JobRecord]) -> tuple[list[Job], set[str]]:
    pipe = queue.client.pipeline(transaction=False)
    for row in page:
        pipe.hgetall(queue.keys.job(row.job_id))
    jobs, gone = [], set()
    for row, raw in zip(page, pipe.execute(), strict=True):
        if raw:
            jobs.append(Job.from_hash(queue, row.job_id, raw))
            continue
        gone.add(row.job_id)
        jobs.append(Job.from_hash(queue, row.job_id, _as_hash(row)))
    return jobs, gone


def _as_hash(row: JobRecord) -> dict[str, str]:
    """A job hash of what the index kept of a job Redis no longer holds."""
    return {
        "name": row.name,
        "data": json.dumps(row.data),
        "timestamp": str(row.timestamp),
        "finishedOn": str(row.finished_on),
        "failedReason": row.failed_reason,
        "atm": str(row.attempts_made),
    }
