"""One builder per Lua script: the only Python that spells a script's KEYS and ARGV order.

Each function is named after its script (``moveToFinished-13.lua`` → :func:`move_to_finished`).
Its positional arguments say where the KEYS come from (the queue's :class:`QueueKeys`, and a
job id or a set name where a key depends on one); its keyword-only arguments are the script's
ARGV, named as in the script's header (snake_case) and in the header's order (the two add
scripts share theirs as :class:`NewJob`, unpacked as keywords, before their own). ``keyPrefix``
is not an argument: it comes from the queue's keys. Booleans become ``"1"`` / ``"0"``; other
values are sent as given (redis-py encodes ints and strings). ``tests/core/test_calls.py`` checks
each builder against its script's header.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypedDict, Unpack

from ..keys import QueueKeys
from .call import Call

#: KEYS[1..11] of every script that can fetch a job (lua/includes/fetchKeys.lua).
FETCH_KEYS = (
    "wait",
    "active",
    "prioritized",
    "events",
    "stalled",
    "limiter",
    "delayed",
    "paused",
    "meta",
    "pc",
    "marker",
)
#: KEYS of addJob-10.
ADD_KEYS = (
    "wait",
    "paused",
    "meta",
    "id",
    "delayed",
    "prioritized",
    "pc",
    "events",
    "marker",
    "active",
)
#: KEYS of addFlowJob-11, which are addJob's and ``waiting-children``.
FLOW_KEYS = (*ADD_KEYS, "waiting-children")
#: KEYS of addJobScheduler-11 and updateJobScheduler-11.
SCHEDULER_KEYS = ("repeat", *ADD_KEYS)
#: KEYS[1..5] of promoteJobs-6 and retryJobs-6 (KEYS[6] is the set they move jobs from).
BATCH_MOVE_KEYS = ("wait", "active", "meta", "events", "marker")


def key_set(keys: QueueKeys, suffixes: tuple[str, ...]) -> tuple[str, ...]:
    """The full key names of ``suffixes`` in queue ``keys`` (cached on ``keys``: the worker's
    hot path)."""
    found = keys.key_sets.get(suffixes)
    if found is None:
        found = keys.key_sets[suffixes] = tuple(keys[s] for s in suffixes)
    return found


def _flag(value: Any) -> str:
    return "1" if value else "0"


def _is_one(reply: Any) -> bool:
    return int(reply) == 1


# --- adding jobs --------------------------------------------------------------------------


class NewJob(TypedDict):
    """The ARGV a new job has in addJob-10 and addFlowJob-11, named and ordered as there."""

    job_id: str
    name: str
    data: str
    opts: str
    timestamp: int
    delay: int
    priority: int
    lifo: bool
    parent_key: str
    parent: str


def add_job(keys: QueueKeys, **job: Unpack[NewJob]) -> Call[Any]:
    """addJob-10: create a job in wait, prioritized or delayed; replies its id."""
    return Call(
        "addJob",
        key_set(keys, ADD_KEYS),
        (
            keys.key_prefix,
            job["job_id"],
            job["name"],
            job["data"],
            job["opts"],
            job["timestamp"],
            job["delay"],
            job["priority"],
            "1" if job["lifo"] else "0",  # the producer's hot path: no _flag() call
            job["parent_key"],
            job["parent"],
        ),
        job_id=job["job_id"] or None,
        pipelined=True,
    )


def add_flow_job(
    keys: QueueKeys, *, parent_later: bool, has_children: bool, **job: Unpack[NewJob]
) -> Call[Any]:
    """addFlowJob-11: one node of a flow (a parent goes to waiting-children); its ARGV are
    addJob's, then its own two."""
    return Call(
        "addFlowJob",
        key_set(keys, FLOW_KEYS),
        (*add_job(keys, **job).args, _flag(parent_later), _flag(has_children)),
        job_id=job["job_id"],
    )


def add_job_scheduler(
    keys: QueueKeys,
    *,
    scheduler_id: str,
    now: int,
    next_millis: Any,
    name: str,
    data: str,
    opts: str,
    every: Any,
    pattern: Any,
    tz: Any,
    limit: Any,
    start_date: Any,
    end_date: Any,
    offset: Any,
    following_millis: Any,
) -> Call[Any]:
    """addJobScheduler-11: create or update a scheduler and its next iteration."""
    return Call(
        "addJobScheduler",
        key_set(keys, SCHEDULER_KEYS),
        (keys.key_prefix, scheduler_id, now, next_millis, name, data, opts, every, pattern, tz)
        + (limit, start_date, end_date, offset, following_millis),
    )


def update_job_scheduler(
    keys: QueueKeys, *, scheduler_id: str, producer_id: str, now: int, next_millis: Any
) -> Call[Any]:
    """updateJobScheduler-11: add a scheduler's next iteration once one is activated."""
    return Call(
        "updateJobScheduler",
        key_set(keys, SCHEDULER_KEYS),
        (keys.key_prefix, scheduler_id, producer_id, now, next_millis),
    )


def remove_job_scheduler(keys: QueueKeys, *, scheduler_id: str) -> Call[bool]:
    """removeJobScheduler-1: True when the scheduler existed."""
    return Call(
        "removeJobScheduler",
        (keys["repeat"],),
        (keys.key_prefix, scheduler_id),
        parse=_is_one,
    )


def pause_job_scheduler(keys: QueueKeys, *, scheduler_id: str, now: int) -> Call[str | int]:
    """pauseJobScheduler-1: the pending run's id removed ("" when none), or the refusal code
    (0 no such scheduler, 2 paused already, 3 neither running nor paused)."""
    return Call(
        "pauseJobScheduler",
        (keys["repeat"],),
        (keys.key_prefix, scheduler_id, now),
        parse=_pause_reply,
    )


def _pause_reply(reply: Any) -> str | int:
    if isinstance(reply, list):
        return str(reply[1].decode() if isinstance(reply[1], bytes) else reply[1])
    return int(reply)


# --- one job ------------------------------------------------------------------------------


def add_log(keys: QueueKeys, *, job_id: str, line: str, keep_logs: int) -> Call[int]:
    """addLog-2: append a log line; replies the number of lines kept."""
    key = keys.job(job_id)
    return Call("addLog", (key, key + ":logs"), (job_id, line, keep_logs), job_id=job_id, parse=int)


def update_progress(keys: QueueKeys, *, job_id: str, progress: str) -> Call[Any]:
    """updateProgress-3: store progress (JSON text) and emit ``progress``."""
    return Call(
        "updateProgress",
        (keys.job(job_id), keys["events"], keys["meta"]),
        (job_id, progress),
        job_id=job_id,
    )


def update_data(keys: QueueKeys, job_id: str, *, data: str) -> Call[Any]:
    """updateData-1: replace the job's data (JSON text)."""
    return Call("updateData", (keys.job(job_id),), (data,), job_id=job_id)


def record_task_run(keys: QueueKeys, job_id: str, *, record: str) -> Call[Any]:
    """recordTaskRun-1: store the django.tasks run record (JSON text) in the job hash."""
    return Call("recordTaskRun", (keys.job(job_id),), (record,), job_id=job_id)


def merge_metrics(keys: QueueKeys, bucket: str, *, delta: str, expire_at_s: int) -> Call[Any]:
    """mergeMetrics-1: add metrics JSON to ``keys[bucket]``, expiring at ``expire_at_s`` (s)."""
    return Call("mergeMetrics", (keys[bucket],), (delta, expire_at_s))


def merge_metric_totals(
    keys: QueueKeys, bucket: str, *, delta: str, stalled: int, max_names: int, other: str
) -> Call[Any]:
    """mergeMetricTotals-1: add metrics JSON and ``stalled`` jobs to the totals ``keys[bucket]``."""
    return Call("mergeMetricTotals", (keys[bucket],), (delta, stalled, max_names, other))


def change_delay(keys: QueueKeys, *, job_id: str, now: int, delay: int) -> Call[Any]:
    """changeDelay-5: re-time a delayed job to ``now + delay`` ms."""
    return Call(
        "changeDelay",
        (keys.job(job_id), *key_set(keys, ("delayed", "events", "marker", "meta"))),
        (job_id, now, delay),
        job_id=job_id,
    )


def change_priority(keys: QueueKeys, *, job_id: str, priority: int, lifo: bool) -> Call[Any]:
    """changePriority-7: set a job's priority, re-queueing it if it waits."""
    suffixes = ("wait", "prioritized", "pc", "meta", "active", "marker")
    return Call(
        "changePriority",
        (keys.job(job_id), *key_set(keys, suffixes)),
        (job_id, priority, _flag(lifo)),
        job_id=job_id,
    )


def promote(keys: QueueKeys, *, job_id: str) -> Call[Any]:
    """promote-9: move one delayed job to wait now."""
    suffixes = ("delayed", "wait", "paused", "meta", "prioritized", "active", "pc", "events")
    return Call(
        "promote",
        key_set(keys, (*suffixes, "marker")),
        (keys.key_prefix, job_id),
        job_id=job_id,
    )


def remove_job(keys: QueueKeys, *, job_id: str, remove_children: bool) -> Call[bool]:
    """removeJob-2: True when removed, False when a worker holds the job's lock."""
    return Call(
        "removeJob",
        (keys.job(job_id), keys["repeat"]),
        (keys.key_prefix, job_id, _flag(remove_children)),
        job_id=job_id,
        parse=_is_one,
    )


def reprocess_job(
    keys: QueueKeys,
    *,
    job_id: str,
    state: str,
    reset_attempts_made: bool,
    reset_attempts_started: bool,
) -> Call[Any]:
    """reprocessJob-9: run a failed or completed job again."""
    suffixes = ("wait", "meta", "active", "prioritized", "pc", "marker")
    return Call(
        "reprocessJob",
        (keys.job(job_id), keys["events"], keys[state], *key_set(keys, suffixes)),
        (keys.key_prefix, job_id, state, _flag(reset_attempts_made), _flag(reset_attempts_started)),
        job_id=job_id,
    )


def move_to_waiting_children(
    keys: QueueKeys, *, job_id: str, token: str, child_key: str, now: int
) -> Call[int]:
    """moveToWaitingChildren-6: park an active parent; replies its code (never raised)."""
    return Call(
        "moveToWaitingChildren",
        (keys["active"], keys["waiting-children"], keys.job(job_id))
        + key_set(keys, ("stalled", "events", "meta")),
        (job_id, token, child_key, now),
        job_id=job_id,
        parse=int,
        raise_codes=False,
    )


# --- the worker's transitions -------------------------------------------------------------


def move_to_active(
    keys: QueueKeys,
    *,
    token: str,
    lock_duration: int,
    now: int,
    limiter_max: int,
    limiter_duration: int,
    worker_name: str,
) -> Call[Any]:
    """moveToActive-11: fetch the next job (BullMQ's fetch tuple)."""
    return Call(
        "moveToActive",
        key_set(keys, FETCH_KEYS),
        (keys.key_prefix, token, lock_duration, now, limiter_max, limiter_duration, worker_name),
    )


def move_to_finished(
    keys: QueueKeys,
    *,
    job_id: str,
    now: int,
    target: str,
    value: str,
    token: str,
    keep_count: int,
    keep_age: int,
    keep_limit: int,
    fetch_next: bool,
    lock_duration: int,
    limiter_max: int,
    limiter_duration: int,
    worker_name: str,
    attempts: int,
    stacktrace: str,
    max_metrics_size: int,
) -> Call[Any]:
    """moveToFinished-13: end an active job in ``target``, optionally fetching the next."""
    return Call(
        "moveToFinished",
        (*key_set(keys, FETCH_KEYS), keys[target], keys.job(job_id)),
        (
            keys.key_prefix,
            job_id,
            now,
            target,
            value,
            token,
            keep_count,
            keep_age,
            keep_limit,
            "1" if fetch_next else "0",  # the hot path: no _flag() call
            lock_duration,
            limiter_max,
            limiter_duration,
            worker_name,
            attempts,
            stacktrace,
            max_metrics_size,
        ),
        job_id=job_id,
    )


def move_to_delayed(
    keys: QueueKeys,
    *,
    job_id: str,
    now: int,
    delay: int,
    token: str,
    skip_attempt: bool,
    failed_reason: str,
    stacktrace: str,
) -> Call[Any]:
    """moveToDelayed-11: an active job waits ``delay`` ms before its next attempt."""
    return Call(
        "moveToDelayed",
        key_set(keys, FETCH_KEYS),
        (keys.key_prefix, job_id, now, delay, token, _flag(skip_attempt), failed_reason)
        + (stacktrace,),
        job_id=job_id,
    )


def retry_job(
    keys: QueueKeys, *, job_id: str, now: int, token: str, failed_reason: str, stacktrace: str
) -> Call[Any]:
    """retryJob-11: an active job goes back to wait for its next attempt."""
    return Call(
        "retryJob",
        key_set(keys, FETCH_KEYS),
        (keys.key_prefix, job_id, now, token, failed_reason, stacktrace),
        job_id=job_id,
    )


def move_job_from_active_to_wait(keys: QueueKeys, *, job_id: str, token: str) -> Call[Any]:
    """moveJobFromActiveToWait-11: hand an active job back, no attempt counted; replies a TTL."""
    return Call(
        "moveJobFromActiveToWait",
        key_set(keys, FETCH_KEYS),
        (keys.key_prefix, job_id, token),
        job_id=job_id,
    )


def extend_locks(keys: QueueKeys, *, lock_duration: int, pairs: Sequence[str]) -> Call[Any]:
    """extendLocks-1: renew locks; ``pairs`` is jobId, token, ...; replies the ids lost."""
    return Call("extendLocks", (keys["stalled"],), (keys.key_prefix, lock_duration, *pairs))


def move_stalled_jobs_to_wait(
    keys: QueueKeys, *, max_stalled_count: int, now: int, stalled_interval: int
) -> Call[Any]:
    """moveStalledJobsToWait-8: the shared stalled check; replies the ids moved back."""
    suffixes = ("stalled", "wait", "active", "stalled-check", "meta", "paused", "marker", "events")
    return Call(
        "moveStalledJobsToWait",
        key_set(keys, suffixes),
        (max_stalled_count, keys.key_prefix, now, stalled_interval),
    )


def clean_finished(
    keys: QueueKeys,
    target: str,
    *,
    now: int,
    default_count: int,
    default_age: int,
    limit: int,
    opts_field: str,
) -> Call[Any]:
    """cleanFinished-2: apply removeOnComplete / removeOnFail to set ``target``."""
    return Call(
        "cleanFinished",
        (keys[target], keys["events"]),
        (keys.key_prefix, now, default_count, default_age, limit, opts_field),
    )
