"""The job index's writer: finished jobs copied from Redis into
:class:`~django_bullq.models.JobRecord`.

With ``BULLQ["JOB_INDEX"]["ENABLED"]``, ``runworker`` runs one :class:`Recorder` per queue in a
thread every ``POLL_INTERVAL`` s (:func:`arecord_forever`), never on a job's path: a pass reads
the completed and failed zsets (score ``finishedOn``, BullMQ's layout) from its watermark on,
``BATCH_SIZE`` ids per ``ZRANGEBYSCORE``, the new jobs' fields with one pipelined ``HMGET``
each, and writes them with one upsert by ``(queue, job_id)`` per batch
(:mod:`django_bullq.record_upsert`).

It re-reads the last :data:`OVERLAP_MS` before its watermark (workers' clocks differ, so a job
can finish "earlier" than one already recorded) and skips the ids it wrote with the same
score. Jobs removed from Redis before a pass sees them (``removeOnComplete: true``, or more
finishing between two passes than a count-based retention keeps) are not recorded.
:func:`purge` deletes rows older than ``RETENTION_S``; a recorder runs it every
:data:`PURGE_EVERY_S` s.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.db import close_old_connections

from .conf import bullq_settings
from .core.clients import LOCK_ERRORS
from .record_upsert import upsert

if TYPE_CHECKING:
    from .core.queue import Queue

logger = logging.getLogger("django_bullq.recorder")

#: The states recorded (their zsets are scored by ``finishedOn``).
RECORDED_STATES = ("completed", "failed")
#: ms before the watermark read again each pass (clock differences between workers).
OVERLAP_MS = 5000
#: Seconds a recorder's lease on its queue lasts without a renewal.
LEASE_S = 60.0
#: Seconds between two retention purges of one recorder.
PURGE_EVERY_S = 60.0
#: Rows one purge statement deletes at most.
PURGE_CHUNK = 10_000
#: Characters of ``failedReason`` kept.
MAX_REASON_CHARS = 2000
_FIELDS = ("name", "timestamp", "finishedOn", "data", "failedReason", "atm")


@dataclass
class _Mark:
    """Where a state's recording stands: the highest score written (None: nothing yet) and
    the ids written at or after ``score - OVERLAP_MS`` with their scores."""

    score: float | None = None
    recent: dict[str, float] = field(default_factory=dict)


class Recorder:
    """Copies one queue's finished jobs into the job index (see the module).

    Args:
        queue: the queue. settings: ``BULLQ["JOB_INDEX"]`` (default: the configured one).
    """

    def __init__(self, queue: Queue, settings: dict[str, Any] | None = None) -> None:
        self.queue = queue
        self.settings = dict(settings or bullq_settings.JOB_INDEX)
        self.database = str(self.settings["DATABASE"])
        self.batch = int(self.settings["BATCH_SIZE"])
        self._marks: dict[str, _Mark] = {}
        self._purged_at = 0.0
        self._lock = threading.Lock()  # a pass still running when the last one starts
        self._lease: Any = None

    def record(self) -> int:
        """One pass over both states (then a purge, every :data:`PURGE_EVERY_S` s); returns
        the rows written (upserted). Several ``runworker`` processes serve a queue: only the
        one holding the queue's lease (a redis-py ``Lock`` of :data:`LEASE_S` s, renewed each
        batch, key ``<prefix>::bullq-recorder:<queue>``: no queue is named "", so no job key
        is spelled so) records it; the others' passes return 0."""
        with self._lock:
            self._lease = self.queue.client.lock(
                f"{self.queue.keys.prefix}::bullq-recorder:{self.queue.name}", timeout=LEASE_S
            )
            if not self._lease.acquire(blocking=False):
                return 0
            try:
                written = sum(self._record_state(state) for state in RECORDED_STATES)
            finally:
                with contextlib.suppress(*LOCK_ERRORS):
                    self._lease.release()
            if time.monotonic() - self._purged_at >= PURGE_EVERY_S:
                self._purged_at = time.monotonic()
                purge(int(self.settings["RETENTION_S"]), database=self.database)
            return written

    def _record_state(self, state: str) -> int:
        mark = self._marks.get(state) or self._load_mark(state)
        self._marks[state] = mark
        low = float("-inf") if mark.score is None else mark.score - OVERLAP_MS
        written = 0
        for pairs in _batches(self.queue, state, low, self.batch):
            new = [(i, s) for i, s in pairs if mark.recent.get(i) != s]
            written += self._write(state, new)
            self._lease.reacquire()  # LockNotOwnedError: the lease ran out, another took it
            top = pairs[-1][1]
            mark.score = top if mark.score is None else max(mark.score, top)
            floor = mark.score - OVERLAP_MS  # what the next pass reads again, and no more
            mark.recent = {i: s for i, s in mark.recent.items() if s >= floor}
            mark.recent.update((i, s) for i, s in new if s >= floor)
        return written

    def _load_mark(self, state: str) -> _Mark:
        """The watermark a new recorder starts from: what the index holds already."""
        from django.db.models import Max

        from .models import JobRecord

        rows = JobRecord.objects.using(self.database).filter(queue=self.queue.name, state=state)
        top = rows.aggregate(top=Max("finished_on"))["top"]
        if top is None:
            return _Mark()
        recent = rows.filter(finished_on__gte=top - OVERLAP_MS).values_list("job_id", "finished_on")
        return _Mark(float(top), {i: float(s) for i, s in recent})

    def _write(self, state: str, pairs: Sequence[tuple[str, float]]) -> int:
        if not pairs:
            return 0
        pipe = self.queue.client.pipeline(transaction=False)
        for job_id, _ in pairs:
            pipe.hmget(self.queue.keys.job(job_id), *_FIELDS)
        rows = [
            self._row(state, job_id, score, fields)
            for (job_id, score), fields in zip(pairs, pipe.execute(), strict=True)
            if fields[0] is not None  # removed since the zset was read
        ]
        upsert(self.database, rows)
        return len(rows)

    def _row(self, state: str, job_id: str, score: float, fields: list[Any]) -> tuple[Any, ...]:
        """A row in :data:`~django_bullq.record_upsert.COLUMNS` order."""
        name, timestamp, finished, raw, reason, attempts = (_text(x) for x in fields)
        data, text = searchable(
            raw, int(self.settings["MAX_DATA_BYTES"]), int(self.settings["MAX_TEXT_CHARS"])
        )
        return (
            self.queue.name,
            job_id,
            name[:255],
            state,
            _int(timestamp),
            _int(finished) or int(score),
            data,
            text,
            reason[:MAX_REASON_CHARS].replace("\x00", ""),
            _int(attempts),
        )


def searchable(raw: str, max_data_bytes: int, max_text_chars: int) -> tuple[str | None, str]:
    """``(data, text)`` of a job's raw data JSON as the index keeps them: the JSON text itself
    (None when over ``max_data_bytes``, not JSON, or holding ``\\u0000``, which PostgreSQL's
    jsonb refuses) and the text the text filter searches: the JSON with non-ASCII unescaped,
    case-folded, cut at ``max_text_chars``, without NUL characters."""
    try:
        decoded = json.loads(raw) if raw else None
    except ValueError:
        return None, raw[:max_text_chars].casefold().replace("\x00", "")
    text = json.dumps(decoded, ensure_ascii=False, separators=(",", ":")) if "\\u" in raw else raw
    keep = raw and len(raw) <= max_data_bytes and len(raw.encode()) <= max_data_bytes
    data = raw if keep and "\\u0000" not in raw else None
    return data, text[:max_text_chars].casefold().replace("\x00", "")


def purge(retention_s: int, *, database: str = "default", now_ms: int | None = None) -> int:
    """Delete the job index's rows finished more than ``retention_s`` s ago (0 keeps every
    row), :data:`PURGE_CHUNK` per statement; returns the rows deleted."""
    if retention_s <= 0:
        return 0
    from .models import JobRecord

    cut = (now_ms if now_ms is not None else int(time.time() * 1000)) - retention_s * 1000
    rows = JobRecord.objects.using(database)
    deleted = 0
    while True:
        pks = list(rows.filter(finished_on__lt=cut).values_list("pk", flat=True)[:PURGE_CHUNK])
        if not pks:
            return deleted
        deleted += rows.filter(pk__in=pks).delete()[0]


def record_all(recorders: Sequence[Recorder]) -> int:
    """One pass of every recorder; errors are logged, never raised (the worker keeps
    running). Returns the rows written."""
    written = 0
    for recorder in recorders:
        try:
            written += recorder.record()
        except Exception:
            logger.exception("job index: recording queue %r failed", recorder.queue.name)
    close_old_connections()
    return written


async def arecord_forever(recorders: Sequence[Recorder], interval_s: float) -> None:
    """Run :func:`record_all` in a thread every ``interval_s`` s until cancelled."""
    while True:
        await asyncio.to_thread(record_all, recorders)
        await asyncio.sleep(interval_s)


def _batches(queue: Queue, state: str, low: float, size: int) -> Iterator[list[tuple[str, float]]]:
    """The ``(id, score)`` of ``state``'s zset from score ``low`` on, ascending, ``size`` at a
    time; each batch starts at the last one's score (skipping the ids of that score it held)."""
    skip = 0
    while True:
        raw = queue.client.zrangebyscore(
            queue.keys[state], low, "+inf", start=skip, num=size, withscores=True
        )
        pairs = [(_text(i), float(s)) for i, s in raw]
        if not pairs:
            return
        yield pairs
        if len(pairs) < size:
            return
        last = pairs[-1][1]
        same = sum(1 for _, s in pairs if s == last)
        skip = skip + same if last == low else same
        low = last


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def _int(value: str) -> int:
    try:
        return int(value)
    except ValueError:
        return 0
