"""The filter over Redis: a walk of one state's list or zset, bounded, resumable by a cursor.

No index is needed: ids are read :data:`CHUNK` at a time, newest first, with the fields a
filter needs (:mod:`~django_bullq.admin.scan_reads`), and matched in Python
(:meth:`~django_bullq.admin.search.JobFilter.matches`). A walk stops at a page of matches, at
the end, or once it spent its budget (:data:`BUDGET_JOBS` jobs or :data:`BUDGET_S` s); the
``cursor`` it returns (jobs walked) continues it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from . import scan_reads as reads
from .found import Walk
from .search import JobFilter

if TYPE_CHECKING:
    from ..core.queue import Queue

#: Ids read per round trip of a walk.
CHUNK = 1000
#: Jobs one page's walk examines at most before it offers to continue.
BUDGET_JOBS = 200_000
#: Seconds one page's walk spends at most before it offers to continue.
BUDGET_S = 0.5


def walk(
    queue: Queue,
    state: str,
    flt: JobFilter,
    *,
    cursor: int = 0,
    want: int = 50,
    budget_jobs: int | None = None,
    budget_s: float | None = None,
) -> Walk:
    """Up to ``want`` jobs of ``state`` passing ``flt``, walking from ``cursor``, until
    ``budget_jobs`` jobs (default :data:`BUDGET_JOBS`) or ``budget_s`` s (default
    :data:`BUDGET_S`) are spent. An ``id`` filter reads that one job (in any state; the
    other fields still apply).

    Returns:
        A :class:`Walk`; its ``cursor`` is the position after the last job examined.
    """
    if flt.id:
        return _one(queue, flt)
    budget_jobs = BUDGET_JOBS if budget_jobs is None else budget_jobs
    deadline = time.monotonic() + (BUDGET_S if budget_s is None else budget_s)
    hits: list[str] = []
    walked, ended = 0, True
    for ids, rows in _chunks(queue, state, flt, cursor):
        for job_id, row in zip(ids, rows, strict=True):
            walked += 1
            if row is not None and flt.matches(*reads.facts(row, state)):
                hits.append(job_id)
                if len(hits) >= want:
                    break
        if len(hits) >= want or walked >= budget_jobs or time.monotonic() >= deadline:
            ended = len(ids) < CHUNK and job_id == ids[-1]
            break
    return Walk(
        jobs=reads.load(queue, hits),
        scanned=walked,
        total=reads.total(queue, state, flt),
        start=cursor,
        cursor=None if ended else cursor + walked,
    )


def matching_ids(queue: Queue, state: str, flt: JobFilter, limit: int) -> list[str]:
    """Every id of ``state`` passing ``flt``, newest first, at most ``limit`` (no time
    budget: the "every matching job" of a bulk action)."""
    if flt.id:
        return [job.id for job in _one(queue, flt).jobs]
    found: list[str] = []
    for ids, rows in _chunks(queue, state, flt, 0):
        found += [
            i for i, r in zip(ids, rows, strict=True) if r and flt.matches(*reads.facts(r, state))
        ]
        if len(found) >= limit:
            break
    return found[:limit]


def _chunks(
    queue: Queue, state: str, flt: JobFilter, start: int
) -> Iterator[tuple[list[str], list[list[Any] | None]]]:
    """``(ids, their HMGET rows)`` of ``state`` from ``start`` to the end, a chunk at a time."""
    while True:
        ids = reads.ids(queue, state, flt, start, CHUNK)
        if not ids:
            return
        yield ids, reads.fields(queue, ids)
        if len(ids) < CHUNK:
            return
        start += len(ids)


def _one(queue: Queue, flt: JobFilter) -> Walk:
    job = queue.get_job(flt.id)
    # an id's filtered time: its finish time once finished, else its creation time
    ok = job is not None and flt.matches(
        job.name, job.finished_on or job.timestamp, job.raw.get("data", "")
    )
    return Walk(jobs=[job] if job is not None and ok else [], scanned=1, total=1, source="id")
