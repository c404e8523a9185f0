"""Queue and job maintenance: promote, retry, clean, drain, obliterate, change a job, metrics.

Each operation is one Lua transition (``lua/<verbNoun>-N.lua``); operations on many jobs run
in batches (one script call per batch) so a large queue never blocks Redis for long. The
:class:`~django_bullq.core.queue.Queue` and :class:`~django_bullq.core.job.Job` methods of
the same names are thin wrappers over these functions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from .errors import BullqError
from .options import PRIORITY_LIMIT, now_ms, to_delay_ms
from .serialization import dumps, to_str

if TYPE_CHECKING:
    from .job import Job
    from .keys import QueueKeys
    from .queue import Queue

#: States ``clean`` accepts, with the key each one lives in (``waiting`` is an alias of wait).
CLEAN_STATES = {
    "completed": "completed",
    "failed": "failed",
    "wait": "wait",
    "waiting": "wait",
    "paused": "paused",
    "active": "active",
    "delayed": "delayed",
    "prioritized": "prioritized",
}
#: Largest batch one cleanJobsInSet call handles (the script caps it too).
CLEAN_BATCH = 10_000
#: Jobs one drain script call removes at most (about 10 ms of Redis time per call).
DRAIN_BATCH = 1_000
METRIC_TYPES = ("completed", "failed")

Call = tuple[str, list[str], list[Any]]


class QueueNotPaused(BullqError):
    """obliterate found the queue running (obliterate-2 answered ``-1``)."""


class ActiveJobsError(BullqError):
    """obliterate found active jobs and ``force`` was not set (obliterate-2 answered ``-2``)."""


@dataclass(frozen=True, slots=True)
class Metrics:
    """Per-minute counts of finished jobs (BullMQ ``getMetrics``).

    Attributes:
        count: jobs finished in that state since metrics were first collected.
        prev_ts: ms of the last data point written (0 when none yet).
        prev_count: ``count`` at that time.
        data: jobs per minute, newest minute first (BullMQ's ``data``).
        total_points: length of the whole data list (BullMQ's ``count``).
    """

    count: int
    prev_ts: int
    prev_count: int
    data: list[int]
    total_points: int


# --- calls (script name, KEYS, ARGV) --------------------------------------------------------


def _set_call(q: Queue, name: str, source: str, args: list[Any]) -> Call:
    keys = [q.keys[s] for s in ("wait", "active", "meta", "events", "marker")] + [q.keys[source]]
    return name, keys, [q.keys.key_prefix, *args]


def _clean_call(q: Queue, cutoff: int, batch: int, state: str) -> Call:
    key = CLEAN_STATES[state]
    return (
        "cleanJobsInSet",
        [q.keys[key], q.keys["events"], q.keys["meta"]],
        [q.keys.key_prefix, cutoff, batch, key],
    )


def _drain_call(
    keys: QueueKeys, delayed: bool, count: int = DRAIN_BATCH, kept: Sequence[int] = (0, 0, 0, 0)
) -> Call:
    return (
        "drain",
        [keys[s] for s in ("wait", "paused", "delayed", "prioritized", "pc")],
        [keys.key_prefix, "1" if delayed else "0", count, *kept],
    )


def drain_step(reply: Any) -> tuple[int, list[int] | None]:
    """One drain-5 answer as (jobs removed, kept counts for the next call or None when done)."""
    removed, more, *kept = (int(x) for x in reply)
    return removed, (kept if more else None)


def _obliterate_call(keys: QueueKeys, force: bool, count: int, cursor: str = "0") -> Call:
    return (
        "obliterate",
        [keys["meta"], keys["active"]],
        [keys.key_prefix, count, "1" if force else "0", cursor],
    )


def _reprocess_call(job: Job, state: str, reset_made: bool, reset_started: bool) -> Call:
    q = job._queue()
    if state not in METRIC_TYPES:
        raise ValueError(f"state must be 'failed' or 'completed', not {state!r}")
    keys = [q.keys.job(job.id), q.keys["events"], q.keys[state]] + [
        q.keys[s] for s in ("wait", "meta", "active", "prioritized", "pc", "marker")
    ]
    return (
        "reprocessJob",
        keys,
        [
            q.keys.key_prefix,
            job.id,
            state,
            "1" if reset_made else "0",
            "1" if reset_started else "0",
        ],
    )


def _priority_call(job: Job, priority: int, lifo: bool) -> Call:
    if (
        isinstance(priority, bool)
        or not isinstance(priority, int)
        or not (0 <= priority <= PRIORITY_LIMIT)
    ):
        raise ValueError(f"priority must be an int in 0..{PRIORITY_LIMIT}")
    q = job._queue()
    keys = [q.keys.job(job.id)] + [
        q.keys[s] for s in ("wait", "prioritized", "pc", "meta", "active", "marker")
    ]
    return "changePriority", keys, [job.id, priority, "1" if lifo else "0"]


def _delay_call(job: Job, delay: int | float | timedelta) -> Call:
    q = job._queue()
    keys = [
        q.keys.job(job.id),
        q.keys["delayed"],
        q.keys["events"],
        q.keys["marker"],
        q.keys["meta"],
    ]
    return "changeDelay", keys, [job.id, now_ms(), to_delay_ms(delay)]


def _check_count(count: int) -> int:
    if isinstance(count, bool) or not isinstance(count, int) or count <= 0:
        raise ValueError("count must be an int > 0")
    return count


def _check_finished_state(state: str) -> str:
    if state not in METRIC_TYPES:
        raise ValueError(f"state must be 'failed' or 'completed', not {state!r}")
    return state


def _clean_args(grace_ms: int | timedelta, limit: int, state: str) -> tuple[int, int]:
    if state not in CLEAN_STATES:
        raise ValueError(f"cannot clean state {state!r}; expected one of {sorted(CLEAN_STATES)}")
    if limit < 0:
        raise ValueError("limit must be >= 0 (0 = no limit)")
    return now_ms() - to_delay_ms(grace_ms), limit


def _next_batch(limit: int, done: int) -> int:
    return min(CLEAN_BATCH, limit - done) if limit else CLEAN_BATCH


def obliterate_step(reply: Any) -> str | None:
    """The cursor for the next obliterate-2 call, or None when the queue is gone.

    Raises:
        QueueNotPaused: the script answered ``-1``. ActiveJobsError: it answered ``-2``.
    """
    if isinstance(reply, int):
        if reply == -1:
            raise QueueNotPaused("obliterate needs a paused queue")
        if reply == -2:
            raise ActiveJobsError("the queue has active jobs; pass force=True to obliterate anyway")
        return None
    return to_str(reply) or "0"


def _metrics_call(q: Queue, kind: str) -> str:
    if kind not in METRIC_TYPES:
        raise ValueError(f"metrics type must be 'completed' or 'failed', not {kind!r}")
    return q.keys[f"metrics:{kind}"]


def _metrics_pipe(pipe: Any, key: str, start: int, end: int) -> None:
    pipe.hmget(key, "count", "prevTS", "prevCount")
    pipe.lrange(key + ":data", start, end)
    pipe.llen(key + ":data")


def _metrics(replies: list[Any]) -> Metrics:
    meta, data, total = replies

    def num(value: Any) -> int:
        try:
            return int(float(to_str(value) or 0))
        except ValueError:
            return 0

    return Metrics(
        count=num(meta[0]),
        prev_ts=num(meta[1]),
        prev_count=num(meta[2]),
        data=[num(x) for x in data],
        total_points=int(total),
    )


# --- queue operations -----------------------------------------------------------------------


def promote_jobs(q: Queue, count: int = 1000) -> int:
    """Move every delayed job to wait now, ``count`` per script call (BullMQ ``promoteJobs``).

    Priorities are ignored, as BullMQ does: promoted jobs go to the head of wait.

    Returns:
        The number of jobs promoted.
    """
    _check_count(count)
    total = 0
    while True:
        moved = int(q.scripts.run(*_set_call(q, "promoteJobs", "delayed", [count])))
        total += moved
        if moved < count:
            return total


async def apromote_jobs(q: Queue, count: int = 1000) -> int:
    """Async twin of :func:`promote_jobs`."""
    _check_count(count)
    total = 0
    while True:
        moved = int(await q.ascripts.arun(*_set_call(q, "promoteJobs", "delayed", [count])))
        total += moved
        if moved < count:
            return total


def retry_jobs(
    q: Queue, state: str = "failed", count: int = 1000, timestamp: int | None = None
) -> int:
    """Move failed (or completed) jobs back to wait, ``count`` per call (BullMQ ``retryJobs``).

    Args:
        state: ``"failed"`` or ``"completed"``.
        count: jobs per script call.
        timestamp: ms; only jobs that finished at or before it (default: now).

    Returns:
        The number of jobs moved. Their ``atm`` is kept (they have ``attempts - atm`` left).
    """
    _check_count(count)
    args = [count, now_ms() if timestamp is None else int(timestamp), _check_finished_state(state)]
    total = 0
    while True:
        moved = int(q.scripts.run(*_set_call(q, "retryJobs", state, args)))
        total += moved
        if moved < count:
            return total


async def aretry_jobs(
    q: Queue, state: str = "failed", count: int = 1000, timestamp: int | None = None
) -> int:
    """Async twin of :func:`retry_jobs`."""
    _check_count(count)
    args = [count, now_ms() if timestamp is None else int(timestamp), _check_finished_state(state)]
    total = 0
    while True:
        moved = int(await q.ascripts.arun(*_set_call(q, "retryJobs", state, args)))
        total += moved
        if moved < count:
            return total


def clean(
    q: Queue, grace_ms: int | timedelta, limit: int = 0, state: str = "completed"
) -> list[str]:
    """Remove jobs of ``state`` older than ``grace_ms`` (BullMQ ``Queue.clean``).

    Runs in batches of at most 10,000 jobs (one ``cleanJobsInSet`` call and one ``cleaned``
    event per batch). Age: finishedOn for completed/failed; see the script header for others.
    Locked active jobs and current scheduler iterations are kept.

    Args:
        grace_ms: ms (or a timedelta); jobs at least this old are removed.
        limit: max jobs removed in total, 0 = no limit.
        state: one of :data:`CLEAN_STATES` (``completed``, ``failed``, ``wait``/``waiting``,
            ``paused``, ``active``, ``delayed``, ``prioritized``).

    Returns:
        The removed job ids, oldest first per batch.

    Raises:
        ValueError: unknown state, negative limit or grace.
    """
    cutoff, limit = _clean_args(grace_ms, limit, state)
    removed: list[str] = []
    while True:
        batch = _next_batch(limit, len(removed))
        ids = [to_str(x) or "" for x in q.scripts.run(*_clean_call(q, cutoff, batch, state))]
        removed.extend(ids)
        if len(ids) < batch or (limit and len(removed) >= limit):
            return removed


async def aclean(
    q: Queue, grace_ms: int | timedelta, limit: int = 0, state: str = "completed"
) -> list[str]:
    """Async twin of :func:`clean`."""
    cutoff, limit = _clean_args(grace_ms, limit, state)
    removed: list[str] = []
    while True:
        batch = _next_batch(limit, len(removed))
        ids = [
            to_str(x) or "" for x in await q.ascripts.arun(*_clean_call(q, cutoff, batch, state))
        ]
        removed.extend(ids)
        if len(ids) < batch or (limit and len(removed) >= limit):
            return removed


def drain(q: Queue, delayed: bool = False) -> int:
    """Remove every waiting job (wait, legacy paused, prioritized; ``delayed`` too if asked).

    BullMQ ``Queue.drain``. Active, finished and waiting-children jobs and current scheduler
    iterations stay. Runs in batches of :data:`DRAIN_BATCH` jobs (one ``drain`` script call
    each), so a large queue does not block Redis; jobs added while it runs may be removed too.

    Returns:
        The number of jobs removed.
    """
    total, kept = 0, [0, 0, 0, 0]
    while True:
        removed, next_kept = drain_step(q.scripts.run(*_drain_call(q.keys, delayed, kept=kept)))
        total += removed
        if next_kept is None:
            return total
        kept = next_kept


async def adrain(q: Queue, delayed: bool = False) -> int:
    """Async twin of :func:`drain`."""
    total, kept = 0, [0, 0, 0, 0]
    while True:
        removed, next_kept = drain_step(
            await q.ascripts.arun(*_drain_call(q.keys, delayed, kept=kept))
        )
        total += removed
        if next_kept is None:
            return total
        kept = next_kept


def obliterate(q: Queue, force: bool = False, count: int = 1000) -> None:
    """Delete the queue, its jobs and every key under ``<prefix>:<queue>:`` (BullMQ
    ``Queue.obliterate``; unlike BullMQ, also ``limiter``, ``de:*`` keys that outlived their
    job, ``waiting-children`` parents and any other key of the queue).

    Pauses the queue first (as BullMQ does; it stays paused if the call is refused), then
    removes ``count`` jobs per script call, then sweeps the remaining keys with SCAN
    (``count`` * 10 keys looked at per call). A parent in another queue waiting for a child
    of this queue is treated as :meth:`Job.remove` of that child treats it: the child leaves
    its dependencies and a parent with none left is released to its wait.

    Raises:
        ValueError: ``count`` is not an int > 0.
        ActiveJobsError: jobs are active and ``force`` is false.
        QueueNotPaused: someone resumed the queue meanwhile.
    """
    _check_count(count)
    q.pause()
    cursor: str | None = "0"
    while cursor is not None:
        cursor = obliterate_step(
            q.scripts.run(*_obliterate_call(q.keys, force, count, cursor), raise_codes=False)
        )


async def aobliterate(q: Queue, force: bool = False, count: int = 1000) -> None:
    """Async twin of :func:`obliterate`."""
    _check_count(count)
    await q.apause()
    cursor: str | None = "0"
    while cursor is not None:
        cursor = obliterate_step(
            await q.ascripts.arun(
                *_obliterate_call(q.keys, force, count, cursor), raise_codes=False
            )
        )


def get_metrics(q: Queue, kind: str, start: int = 0, end: int = -1) -> Metrics:
    """Per-minute metrics of ``"completed"`` or ``"failed"`` jobs (BullMQ ``getMetrics``).

    Written by workers with ``WorkerOptions.metrics_max_data_points`` > 0 (ours or BullMQ's
    ``metrics: {maxDataPoints}``). ``start``/``end`` index the data list (0 = newest minute).
    """
    key = _metrics_call(q, kind)
    pipe = q.client.pipeline(transaction=True)
    _metrics_pipe(pipe, key, start, end)
    return _metrics(pipe.execute())


async def aget_metrics(q: Queue, kind: str, start: int = 0, end: int = -1) -> Metrics:
    """Async twin of :func:`get_metrics`."""
    key = _metrics_call(q, kind)
    pipe = q.aclient.pipeline(transaction=True)
    _metrics_pipe(pipe, key, start, end)
    return _metrics(await pipe.execute())


# --- job operations -------------------------------------------------------------------------


def retry_job(
    job: Job,
    state: str = "failed",
    reset_attempts_made: bool = False,
    reset_attempts_started: bool = False,
) -> None:
    """Run a failed / completed job again (BullMQ ``job.retry``); see ``reprocessJob-9.lua``.

    Raises:
        JobNotFound: the job is gone. JobNotInState: it is not in ``state``.
    """
    q = job._queue()
    q.scripts.run(
        *_reprocess_call(job, state, reset_attempts_made, reset_attempts_started), job_id=job.id
    )


async def aretry_job(
    job: Job,
    state: str = "failed",
    reset_attempts_made: bool = False,
    reset_attempts_started: bool = False,
) -> None:
    """Async twin of :func:`retry_job`."""
    q = job._queue()
    await q.ascripts.arun(
        *_reprocess_call(job, state, reset_attempts_made, reset_attempts_started), job_id=job.id
    )


def change_priority(job: Job, priority: int, lifo: bool = False) -> None:
    """Set a job's priority, re-queueing it if it waits (BullMQ ``job.changePriority``).

    Raises:
        ValueError: priority outside 0..2_097_151. JobNotFound: the job is gone.
    """
    job._queue().scripts.run(*_priority_call(job, priority, lifo), job_id=job.id)
    job.priority = priority


async def achange_priority(job: Job, priority: int, lifo: bool = False) -> None:
    """Async twin of :func:`change_priority`."""
    await job._queue().ascripts.arun(*_priority_call(job, priority, lifo), job_id=job.id)
    job.priority = priority


def change_delay(job: Job, delay: int | float | timedelta) -> None:
    """Re-time a delayed job to run ``delay`` ms from now (BullMQ ``job.changeDelay``).

    Raises:
        JobNotFound: the job is gone. JobNotInState: it is not delayed. ValueError: delay < 0.
    """
    call = _delay_call(job, delay)
    job._queue().scripts.run(*call, job_id=job.id)
    job.delay = int(call[2][2])


async def achange_delay(job: Job, delay: int | float | timedelta) -> None:
    """Async twin of :func:`change_delay`."""
    call = _delay_call(job, delay)
    await job._queue().ascripts.arun(*call, job_id=job.id)
    job.delay = int(call[2][2])


def update_data(job: Job, data: Any) -> None:
    """Replace the job's data (BullMQ ``job.updateData``).

    Raises:
        SerializationError: data is not JSON. JobNotFound: the job is gone.
    """
    q = job._queue()
    q.scripts.run(
        "updateData", [q.keys.job(job.id)], [dumps(data, f"data of job {job.id}")], job_id=job.id
    )
    job.data = data


async def aupdate_data(job: Job, data: Any) -> None:
    """Async twin of :func:`update_data`."""
    q = job._queue()
    await q.ascripts.arun(
        "updateData", [q.keys.job(job.id)], [dumps(data, f"data of job {job.id}")], job_id=job.id
    )
    job.data = data
