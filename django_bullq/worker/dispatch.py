"""The worker's processor: a fetched job back into a call of the task registered under its name.

:data:`dispatcher` is the processor of every core worker ``runworker`` starts: on the loop it
finds the task (one lookup per job name, cached with its signature check) and hands the core
worker either a call for a thread (``def`` tasks, with the database hygiene of
:mod:`~django_bullq.worker.hygiene` in that thread) or a coroutine for the loop (``async def``
tasks, which hop to asgiref's thread for the hygiene only while it holds a connection).
:func:`process_job` is the same lookup as a plain processor, without the hygiene. While a task
runs, :func:`current_job` is its :class:`~django_bullq.core.job.Job`, and :func:`rate_limit`
puts it back on a rate-limited queue. See ``docs/tasks.md``.
"""

from __future__ import annotations

import contextvars
import functools
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, NoReturn

from asgiref.sync import sync_to_async

from ..core.errors import BullqError, RateLimitError, UnrecoverableError
from ..core.job import Job
from ..core.queue import Queue
from ..core.worker import Dispatcher, Route
from ..jobdata import DJANGO_TASK_OPTION, CallChecker
from ..producer.registry import registry
from . import hygiene

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


#: job name -> (the task registered under it, its signature check), filled on first use
_plans: dict[str, tuple[Task[..., Any], CallChecker | None]] = {}


def _plan(name: str) -> tuple[Task[..., Any], CallChecker | None] | None:
    """The task registered under job name ``name`` and its checker (None for a raw task)."""
    task_ = registry.get(name)
    if task_ is None:
        return None
    plan = _plans.get(name)
    if plan is None or plan[0] is not task_:
        plan = (task_, None if task_.raw else CallChecker(task_.name, task_.signature()))
        _plans[name] = plan
    return plan


def _resolve(job: Job) -> tuple[Task[..., Any], list[Any], dict[str, Any]] | None:
    """The task of ``job`` and the arguments of its call; None for a ``django.tasks`` job.

    Raises:
        UnrecoverableError: no task has that name, or the data has the wrong shape.
    """
    plan = _plan(job.name)
    if plan is None:
        if DJANGO_TASK_OPTION not in job.opts:
            raise UnrecoverableError(f"no task registered for job name {job.name!r}")
        return None
    task_, checker = plan
    if checker is None:
        return task_, [job.data], {}
    args, kwargs = checker.split(job.data)
    return task_, args, kwargs


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
    call = _resolve(job)
    if call is None:
        return _process_django_task(job)
    task_, args, kwargs = call
    if task_.is_async:
        return run_async(job, functools.partial(task_.func, *args, **kwargs))
    return run_sync(job, _sync_call(task_, job, args, kwargs))


def route_job(job: Job) -> Route:
    """The route of :data:`dispatcher`: where ``job`` runs, decided on the worker's loop.

    Args:
        job: the fetched core :class:`Job`.

    Returns:
        For an ``async def`` task, a coroutine for the loop (database hygiene in asgiref's
        thread only while that thread holds a connection); otherwise a zero-argument callable
        for a worker thread: the task (``process=True``: in the process pool) with
        :func:`current_job` set, between :func:`~django_bullq.worker.hygiene.before_job` and
        :func:`~django_bullq.worker.hygiene.after_job`. Jobs of ``django.tasks`` tasks are
        looked up in the thread, as by :func:`process_job`.

    Raises:
        UnrecoverableError: no task has that name, or the data has the wrong shape (the job
            fails at once with a readable ``failedReason``).
    """
    call = _resolve(job)
    if call is None:
        return functools.partial(_run_in_thread, job, functools.partial(_process_django_task, job))
    task_, args, kwargs = call
    if task_.is_async:
        return run_async(job, functools.partial(task_.func, *args, **kwargs))
    return functools.partial(_run_in_thread, job, _sync_call(task_, job, args, kwargs))


#: The processor of the workers ``runworker`` starts (:func:`route_job` per job).
dispatcher = Dispatcher(route_job)


def _sync_call(
    task_: Task[..., Any], job: Job, args: list[Any], kwargs: dict[str, Any]
) -> Callable[[], Any]:
    if task_.process:
        from .process_pool import run_in_process

        return functools.partial(run_in_process, task_, job, args, kwargs)
    return functools.partial(task_.func, *args, **kwargs)


def _run_in_thread(job: Job, call: Callable[[], Any]) -> Any:
    """``call()`` in this worker thread between the database hooks, :func:`current_job` set."""
    hygiene.before_job(job)
    token = _current_job.set(job)
    try:
        return call()
    finally:
        _current_job.reset(token)
        hygiene.after_job(job)


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
    hygiene run in asgiref's thread (where the async ORM runs) while it holds a connection.

    A job that opens no connection there (none was open before it, and it used no ORM) costs
    no thread hop; one that does gets its hygiene there after it.
    """
    # The async ORM runs in asgiref's thread-sensitive thread: clean *its* connections.
    if hygiene.async_thread_needs_hygiene():
        await _clean_before_async()
    token = _current_job.set(job)
    try:
        return await call()
    finally:
        _current_job.reset(token)
        if hygiene.async_thread_needs_hygiene():
            await _clean_after_async(job)


_clean_before_async = sync_to_async(hygiene.clean_before_async)
_clean_after_async = sync_to_async(hygiene.clean_after_async)


__all__ = [
    "arate_limit",
    "current_job",
    "dispatcher",
    "process_job",
    "rate_limit",
    "route_job",
    "run_async",
    "run_sync",
]
