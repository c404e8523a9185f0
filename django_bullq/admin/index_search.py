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

from typing import Any

from django.db import connections
from django.db.models import F, QuerySet
from django.db.models.fields.json import KeyTransform

from ..conf import bullq_settings
from ..core.queue import Queue
from ..models import JobRecord
from .found import Walk, jobs_of_records
from .search import JobFilter

#: Matches counted at most for a page's "N matches" (a count beyond is "more than N").
COUNT_LIMIT = 10_000


def enabled() -> bool:
    """True when ``BULLQ["JOB_INDEX"]["ENABLED"]`` is on."""
    return bool(bullq_settings.JOB_INDEX["ENABLED"])


def records(queue: Queue, state: str, flt: JobFilter) -> QuerySet[JobRecord]:
    """The index rows of ``queue`` in ``state`` passing ``flt``, newest finish first."""
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
        rows = _path_filter(rows, flt, connections[database].vendor)
    return rows.order_by("-finished_on", "-pk")


def _path_filter(rows: QuerySet[JobRecord], flt: JobFilter, vendor: str) -> QuerySet[JobRecord]:
    """The JSON path part of the query: "has the key" without a value, else the value at the
    path equals it; on PostgreSQL also the ``@>`` containment the GIN index answers, a list
    index as "some element" (``items.0.sku`` = 7: ``{"items": [{"sku": 7}]}``), which the
    equality then narrows to that element.

    The path is an alias of key transforms, not a ``data__a__b`` lookup, so any key works
    (one named ``contains``, one holding ``__``)."""
    *parents, last = flt.path
    inner: Any = F("data")
    for segment in parents:
        inner = KeyTransform(segment, inner)
    if not flt.has_value:
        return rows.alias(bullq_parent=inner).filter(bullq_parent__has_key=last)
    rows = rows.alias(bullq_at=KeyTransform(last, inner)).filter(bullq_at=flt.value)
    if vendor == "postgresql":
        nested: Any = flt.value
        for segment in reversed(flt.path):
            nested = [nested] if segment.isdigit() else {segment: nested}
        rows = rows.filter(data__contains=nested)
    return rows


def find(queue: Queue, state: str, flt: JobFilter, *, cursor: int = 0, want: int = 50) -> Walk:
    """A page of matches from the index: ``want`` rows from offset ``cursor``.

    Returns:
        A :class:`~django_bullq.admin.found.Walk` with ``source="index"``; ``total`` is the
        matches counted (at most :data:`COUNT_LIMIT` + 1), ``cursor`` the next offset or None.
    """
    rows = records(queue, state, flt)
    page = list(rows[cursor : cursor + want + 1])
    more = len(page) > want
    page = page[:want]
    total = rows.values("pk")[: COUNT_LIMIT + 1].count()
    jobs, gone = jobs_of_records(queue, page)
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
