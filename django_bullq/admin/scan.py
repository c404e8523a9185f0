"""The filter over Redis: a walk of one state's list or zset, bounded, resumable by a cursor.

No index is needed: the ids are read in chunks of :data:`CHUNK` (``LRANGE`` / ``ZREVRANGE``,
newest first as the page lists them, or ``ZREVRANGEBYSCORE`` between ``since`` and ``until``
in completed and failed, whose score is ``finishedOn``), then ``name``, ``timestamp``,
``finishedOn`` and ``data`` of each chunk with one pipelined ``HMGET`` per job, matched in
Python (:meth:`~django_bullq.admin.search.JobFilter.matches`). A walk stops at a page of
matches, at the end, or when it has spent its budget (:data:`BUDGET_JOBS` jobs or
:data:`BUDGET_S` seconds); the ``cursor`` it returns (jobs walked) continues it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..core.job import Job
from .search import FINISHED_STATES, JobFilter

if TYPE_CHECKING:
    from ..core.queue import Queue

#: Ids read per round trip of a walk.
CHUNK = 1000
#: Jobs one page's walk examines at most before it offers to continue.
BUDGET_JOBS = 200_000
#: Seconds one page's walk spends at most before it offers to continue.
BUDGET_S = 0.5
#: Jobs an "every matching job" action acts on at most per confirmation.
MAX_MATCHING = 10_000


@dataclass
class Walk:
    """One walk's result: the matching ``jobs`` (newest first), the jobs ``scanned``, the
    ``total`` in the walked range, where it started (``start``), the ``cursor`` that
    continues it (None when it reached the end), its ``source`` (``"redis"`` or ``"index"``)
    and the ids of listed jobs only the index still holds (``gone``)."""

    jobs: list[Job] = field(default_factory=list)
    scanned: int = 0
    total: int = 0
    start: int = 0
    cursor: int | None = None
    source: str = "redis"
    gone: set[str] = field(default_factory=set)


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
    :data:`BUDGET_S`) are spent.

    An ``id`` filter reads that one job (in any state; the other fields still apply).

    Returns:
        A :class:`Walk`; ``cursor`` is the position after the last job it examined.
    """
    if flt.id:
        return _one(queue, flt)
    budget_jobs = BUDGET_JOBS if budget_jobs is None else budget_jobs
    budget_s = BUDGET_S if budget_s is None else budget_s
    total = _total(queue, state, flt)
    result = Walk(total=total, start=cursor)
    started = time.monotonic()
    hits: list[str] = []
    position = cursor
    while True:
        ids = _ids(queue, state, flt, position, CHUNK)
        if not ids:
            result.cursor = None
            break
        fields = _fields(queue, ids)
        for offset, (job_id, row) in enumerate(zip(ids, fields, strict=True)):
            if row is not None and flt.matches(*_facts(row, state)):
                hits.append(job_id)
                if len(hits) >= want:
                    position += offset + 1
                    result.scanned = position - cursor
                    result.cursor = position
                    result.jobs = _load(queue, hits)
                    return result
        position += len(ids)
        result.scanned = position - cursor
        result.cursor = position
        spent = time.monotonic() - started
        if len(ids) < CHUNK:
            result.cursor = None
            break
        if result.scanned >= budget_jobs or spent >= budget_s:
            break
    result.jobs = _load(queue, hits)
    return result


def matching_ids(queue: Queue, state: str, flt: JobFilter, limit: int) -> list[str]:
    """Every id of ``state`` passing ``flt``, newest first, at most ``limit`` (no time
    budget: the "every matching job" of a bulk action)."""
    if flt.id:
        return [job.id for job in _one(queue, flt).jobs]
    found: list[str] = []
    position = 0
    while len(found) < limit:
        ids = _ids(queue, state, flt, position, CHUNK)
        if not ids:
            break
        for job_id, row in zip(ids, _fields(queue, ids), strict=True):
            if row is not None and flt.matches(*_facts(row, state)):
                found.append(job_id)
        position += len(ids)
    return found[:limit]


def count_matching(queue: Queue, state: str, flt: JobFilter) -> int:
    """How many jobs of ``state`` pass ``flt`` now (a full walk)."""
    return len(matching_ids(queue, state, flt, limit=2**62))


def _one(queue: Queue, flt: JobFilter) -> Walk:
    job = queue.get_job(flt.id)
    if job is None:
        return Walk(scanned=1, total=1)
    finished = job.finished_on or job.timestamp
    raw = job.raw.get("data", "")
    # an id's filtered time: its finish time once finished, else its creation time
    if not flt.matches(job.name, finished if job.finished_on else job.timestamp, raw):
        return Walk(scanned=1, total=1)
    return Walk(jobs=[job], scanned=1, total=1)


def _ranged(state: str, flt: JobFilter) -> bool:
    return state in FINISHED_STATES and (flt.since_ms is not None or flt.until_ms is not None)


def _bounds(flt: JobFilter) -> tuple[str, str]:
    low = "-inf" if flt.since_ms is None else str(flt.since_ms)
    high = "+inf" if flt.until_ms is None else str(flt.until_ms)
    return high, low


def _total(queue: Queue, state: str, flt: JobFilter) -> int:
    if _ranged(state, flt):
        high, low = _bounds(flt)
        return int(queue.client.zcount(queue.keys[state], low, high))
    return int(queue.get_job_counts(state)[state])


def _ids(queue: Queue, state: str, flt: JobFilter, start: int, count: int) -> list[str]:
    if _ranged(state, flt):
        high, low = _bounds(flt)
        raw = queue.client.zrevrangebyscore(queue.keys[state], high, low, start=start, num=count)
        return [_text(x) for x in raw]
    return queue.get_job_ids(state, start=start, end=start + count - 1)


def _fields(queue: Queue, ids: list[str]) -> list[list[Any] | None]:
    pipe = queue.client.pipeline(transaction=False)
    for job_id in ids:
        pipe.hmget(queue.keys.job(job_id), "name", "timestamp", "finishedOn", "data")
    return [row if row[0] is not None else None for row in pipe.execute()]


def _facts(row: list[Any], state: str) -> tuple[str, int | None, str]:
    """``(name, filtered time ms, raw data)`` of one HMGET row."""
    name, timestamp, finished, data = (_text(x) for x in row)
    moment = finished if state in FINISHED_STATES else timestamp
    try:
        when = int(moment) if moment else None
    except ValueError:
        when = None
    return name, when, data


def _load(queue: Queue, ids: list[str]) -> list[Job]:
    if not ids:
        return []
    pipe = queue.client.pipeline(transaction=False)
    for job_id in ids:
        pipe.hgetall(queue.keys.job(job_id))
    return [Job.from_hash(queue, i, raw) for i, raw in zip(ids, pipe.execute(), strict=True) if raw]


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)
