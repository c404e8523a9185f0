"""The Redis reads of a filter's walk (:mod:`django_bullq.admin.scan`): ids, fields, jobs.

Ids come newest first from ``LRANGE`` / ``ZREVRANGE``, or from ``ZREVRANGEBYSCORE`` between
``since`` and ``until`` in completed and failed (their score is ``finishedOn``); the fields a
filter needs come with one script call per chunk (an ``HMGET`` per job), whole jobs with
``HGETALL``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core.job import Job
from .search import FINISHED_STATES, JobFilter

if TYPE_CHECKING:
    from ..core.queue import Queue


def ranged(state: str, flt: JobFilter) -> bool:
    """True when the walk reads ``state``'s zset by score (a time range of a finished state)."""
    return state in FINISHED_STATES and (flt.since_ms is not None or flt.until_ms is not None)


def _bounds(flt: JobFilter) -> tuple[str, str]:
    low = "-inf" if flt.since_ms is None else str(flt.since_ms)
    high = "+inf" if flt.until_ms is None else str(flt.until_ms)
    return high, low


def total(queue: Queue, state: str, flt: JobFilter) -> int:
    """Jobs a walk of ``state`` can see: the state's count, or the range's ``ZCOUNT``."""
    if ranged(state, flt):
        high, low = _bounds(flt)
        return int(queue.client.zcount(queue.keys[state], low, high))
    return int(queue.get_job_counts(state)[state])


def ids(queue: Queue, state: str, flt: JobFilter, start: int, count: int) -> list[str]:
    """``count`` ids of ``state`` from position ``start``, newest first."""
    if ranged(state, flt):
        high, low = _bounds(flt)
        raw = queue.client.zrevrangebyscore(queue.keys[state], high, low, start=start, num=count)
        return [_text(x) for x in raw]
    return queue.get_job_ids(state, start=start, end=start + count - 1)


def fields(queue: Queue, ids: list[str]) -> list[list[Any] | None]:
    """``[name, timestamp, finishedOn, data]`` of each job (None for a job gone), in one call
    per chunk (``Queue.get_job_fields``, not a pipeline of ``HMGET``: 2.4 times faster for
    1,000 jobs, redis-py's cost being per command)."""
    rows = queue.get_job_fields(ids, ("name", "timestamp", "finishedOn", "data"))
    return [row if row and row[0] is not None else None for row in rows]


def facts(row: list[Any], state: str) -> tuple[str, int | None, str]:
    """``(name, filtered time ms, raw data)`` of one HMGET row."""
    name, timestamp, finished, data = (_text(x) for x in row)
    moment = finished if state in FINISHED_STATES else timestamp
    try:
        when = int(moment) if moment else None
    except ValueError:
        when = None
    return name, when, data


def load(queue: Queue, ids: list[str]) -> list[Job]:
    """The jobs ``ids`` (those still there), in that order."""
    if not ids:
        return []
    pipe = queue.client.pipeline(transaction=False)
    for job_id in ids:
        pipe.hgetall(queue.keys.job(job_id))
    return [
        Job.from_hash(queue, i, raw)
        for i, raw in zip(ids, pipe.execute(raise_on_error=False), strict=True)
        if raw
    ]


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)
