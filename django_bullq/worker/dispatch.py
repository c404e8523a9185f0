"""The worker's processor: a fetched job back into a call of the task registered under its name.

:func:`process_job` is the processor of every core worker ``runworker`` starts. While a task
runs, :func:`current_job` is its :class:`~django_bullq.core.job.Job`, and :func:`rate_limit`
puts it back on a rate-limited queue. See ``docs/tasks.md``.
"""

from __future__ import annotations

import contextvars
import functools
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, NoReturn

from ..core.errors import BullqError, RateLimitError, UnrecoverableError
from ..core.job import Job
from ..core.queue import Queue
from ..jobdata import DJANGO_TASK_OPTION, split_call
from ..producer.registry import registry
from .hygiene import after_job, before_job

if TYPE_CHECKING:
    from ..producer.task import Task

_current_job: contextvars.ContextVar[Job | None] = contextvars.ContextVar(
    "django_bullq_current_job", default=None
)


def current_job() -> Job | None:
    """The :class:`Job` being processed by the calling task, or None outside a worker."""
    return _current_job.get()


def _limited_queue() -> Queue:
    job = current_job()
    if job is None or job.queue is None:
        raise BullqError("rate_limit() is called from inside a running task")
    return job.queue


def rate_limit(ms: int) -> NoReturn:
    """Rate-limit the current job's queue for ``ms`` ms and put this job back (BullMQ's
    ``worker.rateLimit(ms)`` + ``throw Worker.RateLimitError()``).

    The job returns to the front of wait without spending an attempt; the worker fetches again
    once the limit expires. Workers with a limiter (``LIMITER_MAX``, or a global rate limit)
    pause too.

    Raises:
        RateLimitError: always (let it propagate). ValueError: ``ms`` not an int >= 1.
        BullqError: called outside a running task.
    """
    _limited_queue().rate_limit(ms)
    raise RateLimitError()


async def arate_limit(ms: int) -> NoReturn:
    """Async twin of :func:`rate_limit`, for ``async def`` tasks."""
    await _limited_queue().arate_limit(ms)
    raise RateLimitError()


def _call_args(task_: Task[..., Any], job: Job) -> tuple[list[Any], dict[str, Any]]:
    if task_.raw:
        return [job.data], {}
    return split_call(task_.name, job.data, task_.signature())


def process_job(job: Job) -> Any:
    """The worker's processor: run the task registered under ``job.name``.

    Args:
        job: the fetched core :class:`Job`.

    Returns:
        The task's return value (must be JSON), or, for an ``async def`` task, a coroutine that
        the core worker awaits on its event loop.

    Jobs of ``django.tasks`` tasks enqueued through
    :class:`~django_bullq.backends.BullQBackend` (job name: the task's module path) run through
    :class:`django_bullq.backends.run.DjangoTaskRun`.

    Raises:
        UnrecoverableError: no task has that name, or the data has the wrong shape (the job
            fails at once with a readable ``failedReason``). Whatever the task raises.
    """
    task_ = registry.get(job.name)
    if task_ is None:
        if DJANGO_TASK_OPTION not in job.opts:
            raise UnrecoverableError(f"no task registered for job name {job.name!r}")
        return _process_django_task(job)
    args, kwargs = _call_args(task_, job)
    if task_.is_async:
        return run_async(job, functools.partial(task_.func, *args, **kwargs))
    if task_.process:
        from .process_pool import run_in_process

        return run_sync(job, functools.partial(run_in_process, task_, job, args, kwargs))
    return run_sync(job, functools.partial(task_.func, *args, **kwargs))


def _process_django_task(job: Job) -> Any:
    try:
        from ..backends.run import DjangoTaskRun
    except ImportError as exc:
        raise UnrecoverableError(
            f"job {job.name!r} is a django.tasks task, but neither "
            f"django.tasks nor django-tasks is importable"
        ) from exc
    run = DjangoTaskRun.of(job)
    if run.is_async:
        return run_async(job, run.acall)
    return run_sync(job, run.call)


def run_sync(job: Job, call: Callable[[], Any]) -> Any:
    """``call()`` in this (worker) thread with :func:`current_job` set to ``job``."""
    token = _current_job.set(job)
    try:
        return call()
    finally:
        _current_job.reset(token)


async def run_async(job: Job, call: Callable[[], Awaitable[Any]]) -> Any:
    """Await ``call()`` on the worker's loop with :func:`current_job` set and the database
    hooks run for asgiref's thread (where the async ORM runs)."""
    from asgiref.sync import sync_to_async

    # The async ORM runs in asgiref's thread-sensitive thread: clean *its* connections.
    await sync_to_async(before_job)(job)
    token = _current_job.set(job)
    try:
        return await call()
    finally:
        _current_job.reset(token)
        await sync_to_async(after_job)(job)


__all__ = ["arate_limit", "current_job", "process_job", "rate_limit", "run_async", "run_sync"]
