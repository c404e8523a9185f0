"""What a filtered job list found: :class:`Walk`, from a walk of Redis or the job index, and
the jobs of a page of index rows (:func:`jobs_of_records`).

The queue page and its "continue" link read it (:mod:`django_bullq.admin.scan`,
:mod:`django_bullq.admin.index_search`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..core.job import Job

if TYPE_CHECKING:
    from ..core.queue import Queue
    from ..models import JobRecord


@dataclass
class Walk:
    """One walk's result: the matching ``jobs`` (newest first), the jobs ``scanned``, the
    ``total`` in the walked range, where it started (``start``), the ``cursor`` that
    continues it (None when it reached the end), its ``source`` (``"redis"``, ``"index"``, or
    ``"id"``: one job read by its id) and the ids of listed jobs only the index still holds
    (``gone``)."""

    jobs: list[Job] = field(default_factory=list)
    scanned: int = 0
    total: int = 0
    start: int = 0
    cursor: int | None = None
    source: str = "redis"
    gone: set[str] = field(default_factory=set)


def jobs_of_records(queue: Queue, page: list[JobRecord]) -> tuple[list[Job], set[str]]:
    """The jobs of a page of index rows, read from Redis (one pipelined ``HGETALL`` each) as
    they are now; a job Redis no longer holds is drawn from its row. Returns ``(jobs, ids of
    those drawn from the index)``."""
    pipe = queue.client.pipeline(transaction=False)
    for row in page:
        pipe.hgetall(queue.keys.job(row.job_id))
    jobs, gone = [], set()
    for row, raw in zip(page, pipe.execute(raise_on_error=False), strict=True):
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
