"""What a ``django.tasks`` task looks like as a BullMQ job, and back.

* job name: the task's ``module_path``; data: ``{"args": [...], "kwargs": {...}}`` (as ``@task``);
* job id: the ``TaskResult.id`` (a custom id chosen at enqueue, so it is known before the add);
* ``opts.djangoTask``: ``{"backend": alias, "runAfter": ms or null}`` marks the job as a Django
  task (BullMQ readers ignore the key);
* priority: :func:`to_bullmq_priority` (docs/django-tasks.md);
* hash field ``djt``: the record the worker keeps per attempt (worker ids, first start,
  errors), written by ``lua/recordTaskRun-1.lua``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from ..core import calls
from ..core.errors import UnboundJobError
from ..core.job import Job
from ..core.serialization import dumps, loads
from ..jobdata import DJANGO_TASK_OPTION
from .compat import (
    TASK_MAX_PRIORITY,
    TASK_MIN_PRIORITY,
    Task,
    TaskError,
    TaskResult,
    TaskResultStatus,
)

#: ``opts`` key marking a job enqueued by :class:`~django_bullq.backends.BullQBackend`.
MARKER = DJANGO_TASK_OPTION
#: Job hash field holding the task record.
RECORD_FIELD = "djt"
#: BullMQ priority of Django's priority 0 (see :func:`to_bullmq_priority`).
PRIORITY_OFFSET: int = int(TASK_MAX_PRIORITY) + 1
_LOWEST: int = int(TASK_MIN_PRIORITY)
_HIGHEST: int = int(TASK_MAX_PRIORITY)

#: BullMQ state -> TaskResultStatus; every other state (wait, prioritized, delayed,
#: waiting-children, paused) is READY.
_STATUS = {
    "active": TaskResultStatus.RUNNING,
    "completed": TaskResultStatus.SUCCESSFUL,
    "failed": TaskResultStatus.FAILED,
}


def to_bullmq_priority(priority: int) -> int:
    """Django's priority (-100..100, higher runs sooner, default 0) as BullMQ's.

    BullMQ runs lower numbers first and 0 means "no priority". The map is
    ``101 - priority``: 100 -> 1, 0 -> 101, -100 -> 201, so every Django task is prioritized
    and Django's order holds among them. A job without priority (0) on the same queue, e.g. one
    added by ``@task`` or by Node, runs before all of them (BullMQ's rule).
    """
    return PRIORITY_OFFSET - int(priority)


def from_bullmq_priority(priority: int) -> int:
    """Inverse of :func:`to_bullmq_priority`, clamped to -100..100 (0 for an unprioritized
    job, e.g. one whose priority an admin removed)."""
    if priority <= 0:
        return 0
    return max(_LOWEST, min(_HIGHEST, PRIORITY_OFFSET - priority))


def ms_to_datetime(ms: int | None) -> datetime | None:
    """Epoch ms as an aware UTC datetime (None stays None)."""
    return None if ms is None else datetime.fromtimestamp(ms / 1000, tz=UTC)


def datetime_to_ms(value: datetime | None) -> int | None:
    """An aware datetime as epoch ms (None stays None)."""
    return None if value is None else int(round(value.timestamp() * 1000))


def read_record(job: Job) -> dict[str, Any]:
    """The job's task record: ``{"worker_ids": [str], "started_at": ms | None,
    "errors": [{"exception_class_path", "traceback"}]}`` (empty when none or unreadable)."""
    try:
        record = loads(job.raw.get(RECORD_FIELD), {})
    except ValueError:
        record = {}
    if not isinstance(record, dict):
        record = {}
    return {
        "worker_ids": [str(w) for w in record.get("worker_ids") or []],
        "started_at": record.get("started_at"),
        "errors": [e for e in record.get("errors") or [] if isinstance(e, dict)],
    }


def write_record(job: Job, record: dict[str, Any]) -> None:
    """Store ``record`` in the job hash (nothing happens when the job was removed)."""
    queue = job.queue
    if queue is None:
        raise UnboundJobError("this Job is not bound to a Queue")
    queue._run(calls.record_task_run(queue.keys, job.id, record=dumps(record, "task record")))
    job.raw[RECORD_FIELD] = dumps(record)


def status_of(state: str) -> Any:
    """The :class:`TaskResultStatus` of a BullMQ state name."""
    return _STATUS.get(state, TaskResultStatus.READY)


def errors_of(job: Job, record: dict[str, Any], status: Any) -> list[Any]:
    """The record's errors as ``TaskError``; a FAILED job without any (refused before it ran,
    stalled too often) gets one from BullMQ's ``failedReason`` / ``stacktrace``, with class
    :class:`django_bullq.core.errors.JobFailedError`."""
    errors = [
        TaskError(
            exception_class_path=str(e.get("exception_class_path", "")),
            traceback=str(e.get("traceback", "")),
        )
        for e in record["errors"]
    ]
    if not errors and status == TaskResultStatus.FAILED:
        trace = job.stacktrace[-1] if job.stacktrace else (job.failed_reason or "")
        errors.append(
            TaskError(
                exception_class_path="django_bullq.core.errors.JobFailedError", traceback=trace
            )
        )
    return errors


def build_result(task: Task[..., Any], job: Job, state: str, alias: str) -> Any:
    """The ``TaskResult`` of ``job`` in BullMQ state ``state``, for ``task`` (already rebuilt
    with the job's priority, queue and run_after) on backend ``alias``."""
    record = read_record(job)
    status = status_of(state)
    data = job.data if isinstance(job.data, dict) else {}
    result: TaskResult[Any, Any] = TaskResult(
        task=task,
        id=job.id,
        status=status,
        enqueued_at=ms_to_datetime(job.timestamp),
        started_at=ms_to_datetime(record["started_at"]),
        finished_at=ms_to_datetime(job.finished_on) if state in ("completed", "failed") else None,
        last_attempted_at=ms_to_datetime(job.processed_on) if record["worker_ids"] else None,
        args=list(data.get("args") or []),
        kwargs=dict(data.get("kwargs") or {}),
        backend=alias,
        errors=errors_of(job, record, status),
        worker_ids=record["worker_ids"],
    )
    if status == TaskResultStatus.SUCCESSFUL:
        object.__setattr__(result, "_return_value", job.returnvalue)
    return result


__all__ = [
    "MARKER",
    "RECORD_FIELD",
    "build_result",
    "datetime_to_ms",
    "errors_of",
    "from_bullmq_priority",
    "ms_to_datetime",
    "read_record",
    "status_of",
    "to_bullmq_priority",
    "write_record",
]
