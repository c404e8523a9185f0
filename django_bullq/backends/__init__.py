"""``BullQBackend``: a backend for Django's tasks framework that stores tasks as BullMQ jobs.

``django.tasks`` on Django 6, the ``django-tasks`` backport on Django 5.2::

    TASKS = {"default": {
        "BACKEND": "django_bullq.backends.BullQBackend",
        "QUEUES": ["default", "emails"],  # bullq queue names; [] allows any
        "OPTIONS": {"ON_COMMIT": False, "DATABASE": "default", "OUTBOX": None},
    }}

``manage.py runworker default emails`` runs the tasks. See docs/django-tasks.md.

The package is laid out like ``django/tasks/backends/``: the backend is here, so the settings
path is where the class is defined; ``compat.py`` picks ``django.tasks`` or ``django_tasks``,
``results.py`` maps jobs to ``TaskResult`` records, and ``run.py`` runs one attempt of a Django
task inside the worker.
"""

from __future__ import annotations

import dataclasses
import functools
from datetime import datetime
from typing import Any, TypedDict

from asgiref.sync import sync_to_async
from django.core.checks import CheckMessage, Error
from django.utils.crypto import get_random_string
from django.utils.module_loading import import_string

from ..conf import bullq_settings, get_queue
from ..core.errors import BullqError
from ..core.job import Job
from ..core.names import validate_queue_name
from ..producer.transaction import JobAdd, Pending, asubmit, submit
from ..timeutils import aware
from .compat import (
    BaseTaskBackend,
    Task,
    TaskResult,
    TaskResultDoesNotExist,
    TaskResultStatus,
    task_enqueued,
)
from .results import (
    MARKER,
    build_result,
    datetime_to_ms,
    from_bullmq_priority,
    ms_to_datetime,
    to_bullmq_priority,
)

#: Keys of the backend's ``OPTIONS``.
OPTION_KEYS = ("ON_COMMIT", "DATABASE", "OUTBOX")


class _Times(TypedDict):
    enqueued_at: datetime | None
    started_at: datetime | None
    last_attempted_at: datetime | None
    finished_at: datetime | None


#: The times of a new ``TaskResult``: none yet (``enqueued_at`` is set once the job is added).
NOT_STARTED: _Times = {
    "enqueued_at": None,
    "started_at": None,
    "last_attempted_at": None,
    "finished_at": None,
}


#: Between a result id's random part and the queue it names.
_ID_SEPARATOR = "@"
_RANDOM_CHARS = 32


def result_id(queue_name: str) -> str:
    """A new ``TaskResult`` id (the job's id): 32 random characters, ``@``, the queue's name,
    so that ``get_result`` finds the job in any queue, listed in the settings or not."""
    return f"{get_random_string(_RANDOM_CHARS)}{_ID_SEPARATOR}{queue_name}"


def queue_of_result(result_id: str) -> str | None:
    """The queue a ``result_id`` id names; None for an id of another shape."""
    if len(result_id) <= _RANDOM_CHARS + 1 or result_id[_RANDOM_CHARS] != _ID_SEPARATOR:
        return None
    return result_id[_RANDOM_CHARS + 1 :]


def _pending_job(add: JobAdd[Pending[Job]]) -> Pending[Job]:
    """The pending of a ``django.tasks`` add that waits for the commit."""
    return Pending("job")


class BullQBackend(BaseTaskBackend):
    """Enqueues ``django.tasks`` tasks as BullMQ jobs; ``runworker`` runs them.

    ``OPTIONS``: ``ON_COMMIT`` (bool, default False, Django's own behaviour): inside
    ``transaction.atomic(using=DATABASE)`` add the job when that transaction commits;
    ``DATABASE`` (alias, default ``"default"``); ``OUTBOX`` (None follows
    ``BULLQ["OUTBOX"]["ENABLED"]``; True / False) for on-commit enqueues.

    The task's ``queue_name`` is the bullq queue; ``priority`` maps to BullMQ's (see
    :func:`~django_bullq.backends.results.to_bullmq_priority`); ``run_after`` becomes the job's
    delay. The ``TaskResult.id`` is the job id.
    """

    supports_defer = True
    supports_async_task = True
    supports_get_result = True
    supports_priority = True

    def __init__(self, alias: str, params: dict[str, Any]) -> None:
        super().__init__(alias, params)
        self.on_commit = bool(self.options.get("ON_COMMIT", False))
        self.database = str(self.options.get("DATABASE", "default"))
        self.outbox: bool | None = self.options.get("OUTBOX")

    # --- enqueue ---------------------------------------------------------------------------

    def enqueue(self, task: Task[..., Any], args: Any, kwargs: Any) -> Any:
        """Add a job running ``task(*args, **kwargs)``; returns its READY ``TaskResult``.

        ``enqueued_at`` is set and ``task_enqueued`` sent once the job is in Redis (after the
        commit with ``ON_COMMIT``).

        Raises:
            InvalidTask: ``validate_task`` refuses the task. TypeError / ValueError: an
                argument Django's JSON normalisation refuses. redis.RedisError: Redis down.
        """
        result = self._new_result(task, args, kwargs)
        submit(self._add(result))
        return result

    async def aenqueue(self, task: Task[..., Any], args: Any, kwargs: Any) -> Any:
        """Async twin of :meth:`enqueue` (a native async add)."""
        result = self._new_result(task, args, kwargs)
        await asubmit(self._add(result))
        return result

    def _new_result(self, task: Task[..., Any], args: Any, kwargs: Any) -> Any:
        self.validate_task(task)
        return TaskResult(
            task=task,
            id=result_id(task.queue_name),
            status=TaskResultStatus.READY,
            args=args,
            kwargs=kwargs,
            backend=self.alias,
            errors=[],
            worker_ids=[],
            **NOT_STARTED,
        )

    def _add(self, result: Any) -> JobAdd[Pending[Job]]:
        task = result.task
        return JobAdd(
            task.queue_name,
            task.module_path,
            {"args": result.args, "kwargs": result.kwargs},
            self._job_options(task, result),
            _pending_job,
            database=self.database,
            on_commit=self.on_commit,
            outbox=self.outbox,
            on_added=functools.partial(self._enqueued, result),
        )

    def _job_options(self, task: Task[..., Any], result: Any) -> dict[str, Any]:
        run_after = aware(task.run_after) if task.run_after is not None else None
        options: dict[str, Any] = {
            "job_id": result.id,
            "priority": to_bullmq_priority(task.priority),
            "extra": {MARKER: {"backend": self.alias, "runAfter": datetime_to_ms(run_after)}},
        }
        if run_after is not None:
            options["delay"] = run_after
        return options

    def _enqueued(self, result: Any, job: Job) -> None:
        object.__setattr__(result, "enqueued_at", ms_to_datetime(job.timestamp))
        task_enqueued.send(type(self), task_result=result)

    # --- results ---------------------------------------------------------------------------

    def get_result(self, result_id: str) -> Any:
        """The ``TaskResult`` of job ``result_id``, read from Redis.

        Raises:
            TaskResultDoesNotExist: no such Django-task job in this backend's queues (removed
                jobs, e.g. by ``remove_on_complete``, are gone too).
        """
        for name in self.result_queues(result_id):
            queue = get_queue(name)
            job = queue.get_job(result_id)
            if job is not None and MARKER in job.opts:
                return self.result_of(job, queue.get_job_state(result_id))
        raise TaskResultDoesNotExist(result_id)

    async def aget_result(self, result_id: str) -> Any:
        """Async twin of :meth:`get_result` (Redis reads only, in a worker thread: not the
        hot path, and no database access to keep on asgiref's thread)."""
        return await sync_to_async(self.get_result, thread_sensitive=False)(result_id)

    def result_queues(self, result_id: str = "") -> list[str]:
        """Queues ``get_result`` looks in for ``result_id``: the queue the id names (ids made
        by ``result_id``) when this backend takes it, then ``QUEUES``, or when that allows
        any name, the queues of ``BULLQ["QUEUES"]`` and ``BULLQ["DEFAULT_QUEUE"]``."""
        known = (
            sorted(self.queues)
            if self.queues
            else sorted({bullq_settings.DEFAULT_QUEUE, *bullq_settings.QUEUES})
        )
        named = queue_of_result(result_id)
        if named is None or named in known or (self.queues and named not in self.queues):
            return known
        return [named, *known]

    def result_of(self, job: Job, state: str) -> Any:
        """The ``TaskResult`` of a Django-task job in BullMQ state ``state``.

        Raises:
            TaskResultDoesNotExist: the job's name is not the path of a ``django.tasks`` task.
        """
        return build_result(self.task_of(job), job, state, self.alias)

    def task_of(self, job: Job) -> Any:
        """The ``Task`` a job runs, with the job's priority, queue and ``run_after``.

        Raises:
            TaskResultDoesNotExist: ``job.name`` does not import as a ``django.tasks`` task.
        """
        try:
            found = import_string(job.name)
        except ImportError as exc:
            raise TaskResultDoesNotExist(
                f"job {job.id}: cannot import task {job.name!r}: {exc}"
            ) from exc
        if not isinstance(found, Task):
            raise TaskResultDoesNotExist(f"job {job.id}: {job.name!r} is not a django.tasks task")
        marker = job.opts.get(MARKER) or {}
        run_after = marker.get("runAfter") if isinstance(marker, dict) else None
        return dataclasses.replace(
            found,
            priority=from_bullmq_priority(job.priority),
            backend=self.alias,
            queue_name=job.queue.name if job.queue is not None else found.queue_name,
            run_after=ms_to_datetime(run_after) if isinstance(run_after, int) else None,
        )

    # --- system checks ---------------------------------------------------------------------

    def check(self, **kwargs: Any) -> list[CheckMessage]:
        """``django_bullq.E011``: a queue name bullq cannot use, or an unknown ``OPTIONS`` key."""
        errors: list[CheckMessage] = []
        where = f"TASKS[{self.alias!r}]"
        for name in sorted(self.queues):
            try:
                validate_queue_name(name)
            except BullqError as exc:
                errors.append(
                    Error(
                        f"{where}['QUEUES']: {exc}",
                        id="django_bullq.E011",
                        hint="Queue names are bullq queue names; see docs/django-tasks.md.",
                    )
                )
        for key in self.options:
            if key not in OPTION_KEYS:
                errors.append(
                    Error(
                        f"{where}['OPTIONS'] has an unknown key {key!r}.",
                        id="django_bullq.E011",
                        hint=f"Known keys: {', '.join(OPTION_KEYS)}.",
                    )
                )
        return errors


__all__ = ["BullQBackend"]
