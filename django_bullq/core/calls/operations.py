"""Queue and job maintenance written once: promote, retry, clean, drain, obliterate, metrics.

Each operation on many jobs is a generator of script calls (:data:`~.call.Steps`): it runs in
batches, one script call per batch, so a large queue never blocks Redis for long. The
:class:`~django_bullq.core.queue.queue.Queue` and :class:`~django_bullq.core.job.Job` methods of the
same names drive them, sync or async (``Queue._drive`` / ``Queue._adrive``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from ..errors import FailedChildren
from ..keys import QueueKeys
from ..options import PRIORITY_LIMIT, now_ms, to_delay_ms
from ..serialization import loads, to_str
from . import builders, queue_builders
from .call import Call, Read, Steps

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


def check_count(count: int) -> int:
    """``count`` when it is an int > 0; else ValueError."""
    if isinstance(count, bool) or not isinstance(count, int) or count <= 0:
        raise ValueError("count must be an int > 0")
    return count


def check_finished_state(state: str) -> str:
    """``state`` when it is ``failed`` or ``completed``; else ValueError."""
    if state not in METRIC_TYPES:
        raise ValueError(f"state must be 'failed' or 'completed', not {state!r}")
    return state


def check_priority(priority: int) -> int:
    """``priority`` when it is an int in 0..2_097_151; else ValueError."""
    if (
        isinstance(priority, bool)
        or not isinstance(priority, int)
        or not (0 <= priority <= PRIORITY_LIMIT)
    ):
        raise ValueError(f"priority must be an int in 0..{PRIORITY_LIMIT}")
    return priority


# --- queue operations -----------------------------------------------------------------------


def promote_jobs(keys: QueueKeys, count: int = 1000) -> Steps[int]:
    """Move every delayed job to wait now, ``count`` per script call (BullMQ ``promoteJobs``).

    Priorities are ignored, as BullMQ does: promoted jobs go to the head of wait.

    Returns:
        The number of jobs promoted.
    """
    check_count(count)
    total = 0
    while True:
        moved: int = yield queue_builders.promote_jobs(keys, count=count)
        total += moved
        if moved < count:
            return total


def retry_jobs(
    keys: QueueKeys, state: str = "failed", count: int = 1000, timestamp: int | None = None
) -> Steps[int]:
    """Move failed (or completed) jobs back to wait, ``count`` per call (BullMQ ``retryJobs``).

    Args:
        state: ``"failed"`` or ``"completed"``.
        count: jobs per script call.
        timestamp: ms; only jobs that finished at or before it (default: now).

    Returns:
        The number of jobs moved. Their ``atm`` is kept (they have ``attempts - atm`` left).
    """
    check_count(count)
    call = queue_builders.retry_jobs(
        keys,
        count=count,
        timestamp=now_ms() if timestamp is None else int(timestamp),
        state=check_finished_state(state),
    )
    total = 0
    while True:
        moved: int = yield call
        total += moved
        if moved < count:
            return total


def clean(
    keys: QueueKeys, grace_ms: int | timedelta, limit: int = 0, state: str = "completed"
) -> Steps[list[str]]:
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
    if state not in CLEAN_STATES:
        raise ValueError(f"cannot clean state {state!r}; expected one of {sorted(CLEAN_STATES)}")
    if limit < 0:
        raise ValueError("limit must be >= 0 (0 = no limit)")
    cutoff = now_ms() - to_delay_ms(grace_ms)
    removed: list[str] = []
    while True:
        batch = min(CLEAN_BATCH, limit - len(removed)) if limit else CLEAN_BATCH
        reply = yield queue_builders.clean_jobs_in_set(
            keys, cutoff=cutoff, limit=batch, state=CLEAN_STATES[state]
        )
        ids = [to_str(x) or "" for x in reply]
        removed.extend(ids)
        if len(ids) < batch or (limit and len(removed) >= limit):
            return removed


def drain(keys: QueueKeys, *, delayed: bool = False) -> Steps[int]:
    """Remove every waiting job (wait, legacy paused, prioritized; ``delayed`` too if asked).

    BullMQ ``Queue.drain``. Active, finished and waiting-children jobs and current scheduler
    iterations stay. Runs in batches of :data:`DRAIN_BATCH` jobs (one ``drain`` script call
    each), so a large queue does not block Redis; jobs added while it runs may be removed too.

    Returns:
        The number of jobs removed.
    """
    total, kept = 0, [0, 0, 0, 0]
    while True:
        reply = yield queue_builders.drain(keys, delayed=delayed, count=DRAIN_BATCH, kept=kept)
        removed, next_kept = drain_step(reply)
        total += removed
        if next_kept is None:
            return total
        kept = next_kept


def drain_step(reply: Any) -> tuple[int, list[int] | None]:
    """One drain-5 answer as (jobs removed, kept counts for the next call or None when done)."""
    removed, more, *kept = (int(x) for x in reply)
    return removed, (kept if more else None)


def obliterate(keys: QueueKeys, *, force: bool = False, count: int = 1000) -> Steps[None]:
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
    check_count(count)
    yield queue_builders.pause(keys, state="paused")
    cursor: str | None = "0"
    while cursor is not None:
        reply = yield queue_builders.obliterate(keys, count=count, force=force, cursor=cursor)
        cursor = obliterate_step(reply)


def obliterate_step(reply: Any) -> str | None:
    """The cursor for the next obliterate-2 call, or None when the queue is gone.

    The script's codes are raised by the call itself, through the one code table
    (:func:`~django_bullq.core.errors.script_error`: ``-1`` QueueNotPaused, ``-2``
    ActiveJobsError); the only int left here is ``0``, done.
    """
    return None if isinstance(reply, int) else to_str(reply) or "0"


def resume(keys: QueueKeys) -> Steps[None]:
    """Resume the queue; legacy v5 ``paused`` lists are migrated into wait, call by call."""
    while (yield queue_builders.pause(keys, state="resumed")) > 0:
        pass


def get_metrics(keys: QueueKeys, kind: str, start: int = 0, end: int = -1) -> Read[Metrics]:
    """Per-minute metrics of ``"completed"`` or ``"failed"`` jobs (BullMQ ``getMetrics``).

    Written by workers with ``WorkerOptions.metrics_max_data_points`` > 0 (ours or BullMQ's
    ``metrics: {maxDataPoints}``). ``start``/``end`` index the data list (0 = newest minute).
    """
    if kind not in METRIC_TYPES:
        raise ValueError(f"metrics type must be 'completed' or 'failed', not {kind!r}")
    key = keys[f"metrics:{kind}"]
    commands = (
        ("HMGET", key, "count", "prevTS", "prevCount"),
        ("LRANGE", key + ":data", start, end),
        ("LLEN", key + ":data"),
    )
    return Read(commands, _metrics)


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


# --- job operations -------------------------------------------------------------------------


def reprocess_job(
    keys: QueueKeys,
    job_id: str,
    state: str = "failed",
    *,
    reset_attempts_made: bool = False,
    reset_attempts_started: bool = False,
) -> Call[Any]:
    """reprocessJob-9 for ``job.retry`` (BullMQ); ValueError unless failed or completed."""
    return builders.reprocess_job(
        keys,
        job_id=job_id,
        state=check_finished_state(state),
        reset_attempts_made=reset_attempts_made,
        reset_attempts_started=reset_attempts_started,
    )


# --- a parent's children (flows) ----------------------------------------------------------


def dependencies(keys: QueueKeys, job_id: str) -> Read[dict[str, Any]]:
    """A parent's children by state (BullMQ ``getDependencies``): ``processed`` ({key:
    returnvalue}), ``unprocessed`` (sorted keys), ``ignored`` ({key: failedReason}),
    ``failed`` (keys), and ``all`` (every child key)."""
    key = keys.job(job_id)
    commands = (
        ("HGETALL", key + ":processed"),
        ("SMEMBERS", key + ":dependencies"),
        ("HGETALL", key + ":failed"),
        ("ZRANGE", key + ":unsuccessful", 0, -1),
    )
    return Read(commands, _dependencies)


def _dependencies(replies: list[Any]) -> dict[str, Any]:
    processed, pending, ignored, failed = replies
    out: dict[str, Any] = {
        "processed": {to_str(k): _json(v) for k, v in processed.items()},
        "unprocessed": sorted(to_str(k) or "" for k in pending),
        "ignored": {to_str(k): to_str(v) for k, v in ignored.items()},
        "failed": [to_str(k) or "" for k in failed],
    }
    out["all"] = [*out["unprocessed"], *out["processed"], *out["ignored"], *out["failed"]]
    return out


def _json(value: Any) -> Any:
    try:
        return loads(value)
    except ValueError:
        return to_str(value)


def count_dependencies(deps: dict[str, Any]) -> dict[str, int]:
    """``{"processed", "unprocessed", "ignored", "failed"}`` sizes of :func:`dependencies`."""
    return {name: len(deps[name]) for name in ("processed", "unprocessed", "ignored", "failed")}


def move_to_waiting_children(
    keys: QueueKeys, job_id: str, token: str, child_key: str
) -> Steps[tuple[int, list[str]]]:
    """moveToWaitingChildren-6, then (code -9 only) the first failed child's key.

    Returns:
        (the script's code, ``[failed child key]`` or ``[]``); the caller maps the code.
    """
    call = builders.move_to_waiting_children(
        keys, job_id=job_id, token=token, child_key=child_key, now=now_ms()
    )
    code: int = yield call
    failed: list[str] = []
    if code == FailedChildren.code:
        failed = yield Read(
            (("ZRANGE", keys.job(job_id) + ":unsuccessful", 0, 0),),
            lambda replies: [to_str(x) or "" for x in replies[0]],
        )
    return code, failed
