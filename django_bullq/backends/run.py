"""The worker side of :class:`~django_bullq.backends.BullQBackend`: one attempt of a
``django.tasks`` task, as Django's own backends run one.

:func:`~django_bullq.worker.dispatch.process_job` hands a job it has no ``@task`` for, whose
``opts`` carry ``djangoTask``, to :meth:`DjangoTaskRun.of`. An attempt:

1. records this worker's id (and the first start) in the job's task record, marks the result
   RUNNING and sends ``task_started``;
2. calls the function (``TaskContext`` first when ``takes_context``);
3. on success normalises the return value to JSON (Django's rules; a value it refuses fails the
   attempt), marks SUCCESSFUL and sends ``task_finished``;
4. on an exception appends a ``TaskError`` (class path, traceback) to the record, marks FAILED
   (READY when BullMQ will retry it), sends ``task_finished`` and re-raises, so the worker
   retries or fails the job as for any job.

A run that calls ``rate_limit()`` or moves its job to waiting-children is not an attempt: its
worker id is taken back and nothing else is recorded.
"""

from __future__ import annotations

import traceback
from inspect import iscoroutinefunction, signature
from typing import Any

from django.utils import timezone

from ..core.errors import RateLimitError, UnrecoverableError, WaitingChildrenError
from ..core.job import Job
from ..jobdata import split_call
from .compat import (
    TaskContext,
    TaskError,
    TaskResultStatus,
    normalize_json,
    task_backends,
    task_finished,
    task_started,
)
from .results import MARKER, build_result, ms_to_datetime, read_record, write_record

#: Exceptions that steer the worker instead of failing the attempt: passed through unrecorded.
CONTROL_FLOW = (RateLimitError, WaitingChildrenError)


class DjangoTaskRun:
    """One attempt of a Django task. ``call`` / ``acall`` run it (sync / async function).

    Attributes:
        job: the fetched job. backend: the ``BullQBackend``. task: the ``Task``.
        result: the ``TaskResult`` updated as the attempt goes. is_async: coroutine function.
    """

    @classmethod
    def of(cls, job: Job) -> DjangoTaskRun:
        """The run of a job enqueued by ``BullQBackend`` (its ``opts`` carry the marker).

        Raises:
            UnrecoverableError: the backend alias, the task path, the data or the arguments
                are unusable (the job fails at once, readably).
        """
        marker = job.opts.get(MARKER)
        alias = str(marker.get("backend", "default")) if isinstance(marker, dict) else "default"
        from . import BullQBackend

        try:
            backend = task_backends[alias]
            if not isinstance(backend, BullQBackend):
                raise TypeError(f"{type(backend).__name__} is not django_bullq's BullQBackend")
            task = backend.task_of(job)
        except Exception as exc:
            raise UnrecoverableError(
                f"cannot run django.tasks job {job.name!r} (backend {alias!r}): {exc}"
            ) from exc
        return cls(job, backend, task)

    def __init__(self, job: Job, backend: Any, task: Any) -> None:
        self.job = job
        self.backend = backend
        self.task = task
        self.is_async = iscoroutinefunction(task.func)
        self.result = build_result(task, job, "active", backend.alias)
        leading = (None,) if task.takes_context else ()
        self.args, self.kwargs = split_call(
            task.module_path, job.data, signature(task.func), leading
        )

    # --- the attempt -----------------------------------------------------------------------

    def call(self) -> Any:
        """Run a sync task function here; returns its JSON-normalised value."""
        self.start()
        try:
            return self.finish(self.task.func(*self._call_args(), **self.kwargs))
        except Exception as exc:
            self.stopped_by(exc)
            raise

    async def acall(self) -> Any:
        """Await an async task function; returns its JSON-normalised value."""
        from asgiref.sync import sync_to_async

        await sync_to_async(self.start)()
        try:
            return self.finish(await self.task.func(*self._call_args(), **self.kwargs))
        except Exception as exc:
            await sync_to_async(self.stopped_by)(exc)
            raise

    def _call_args(self) -> list[Any]:
        if not self.task.takes_context:
            return list(self.args)
        return [TaskContext(task_result=self.result), *self.args]

    def start(self) -> None:
        """Record this attempt (worker id, first start), mark RUNNING, send task_started."""
        record = read_record(self.job)
        now = self.job.processed_on or int(timezone.now().timestamp() * 1000)
        record["worker_ids"].append(self.worker_id())
        if record["started_at"] is None:
            record["started_at"] = now
        write_record(self.job, record)
        self._set(
            status=TaskResultStatus.RUNNING,
            worker_ids=record["worker_ids"],
            started_at=ms_to_datetime(record["started_at"]),
            last_attempted_at=ms_to_datetime(now),
        )
        task_started.send(type(self.backend), task_result=self.result)

    def stopped_by(self, exc: Exception) -> None:
        """Record how ``exc`` ended the attempt: :meth:`undo_start` for the control flow of
        ``rate_limit()`` / waiting-children, else :meth:`fail`."""
        if isinstance(exc, CONTROL_FLOW):
            self.undo_start()
        else:
            self.fail(exc)

    def undo_start(self) -> None:
        """Forget this attempt's worker id: a rate-limited run, or one now waiting for its
        children, is not an attempt (BullMQ does not count it either)."""
        record = read_record(self.job)
        if record["worker_ids"]:
            record["worker_ids"].pop()
            write_record(self.job, record)

    def finish(self, value: Any) -> Any:
        """Normalise ``value`` (Django's JSON rules), mark SUCCESSFUL, send task_finished."""
        normalised = normalize_json(value)
        object.__setattr__(self.result, "_return_value", normalised)
        self._set(status=TaskResultStatus.SUCCESSFUL, finished_at=timezone.now())
        task_finished.send(type(self.backend), task_result=self.result)
        return normalised

    def fail(self, exc: BaseException) -> None:
        """Record ``exc`` as a TaskError, mark FAILED (READY if retried), send task_finished."""
        kind = type(exc)
        error = {
            "exception_class_path": f"{kind.__module__}.{kind.__qualname__}",
            "traceback": "".join(traceback.format_exception(exc)),
        }
        record = read_record(self.job)
        record["errors"].append(error)
        write_record(self.job, record)
        self.result.errors.append(TaskError(**error))
        if self.will_retry(exc):
            self._set(status=TaskResultStatus.READY)
        else:
            self._set(status=TaskResultStatus.FAILED, finished_at=timezone.now())
        task_finished.send(type(self.backend), task_result=self.result)

    def will_retry(self, exc: BaseException) -> bool:
        """Whether the worker will retry after ``exc`` (attempts left, not unrecoverable)."""
        if isinstance(exc, UnrecoverableError) or getattr(exc, "unrecoverable", False) is True:
            return False
        return self.job.attempts_made + 1 < self.job.attempts

    def worker_id(self) -> str:
        """This worker's id: its name (``runworker --name``), else the worker's random id."""
        return self.job.processed_by or (self.job.token or "").split(":")[0] or "unknown"

    def _set(self, **fields: Any) -> None:
        for name, value in fields.items():
            object.__setattr__(self.result, name, value)


__all__ = ["DjangoTaskRun"]
