"""The ``@task`` decorator, the task registry and the worker-side dispatcher ``process_job``.

A task is a function whose calls become BullMQ jobs:

* job name: the function's import path ``module.qualname`` (or ``name=...``);
* job data: ``{"args": [...], "kwargs": {...}}`` (strict JSON), or, for ``raw=True`` tasks, the
  single value passed to ``enqueue`` (so jobs added by Node / Python BullMQ producers fit).

See ``docs/tasks.md``.
"""

from __future__ import annotations

import contextvars
import functools
import inspect
import threading
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any, Generic, NoReturn, ParamSpec, TypeVar, overload

from django.utils import timezone

from ..conf import get_queue
from ..core.errors import BullqError, RateLimitError, UnrecoverableError
from ..core.job import Job
from ..core.options import JobOptions
from ..core.queue import Queue
from ..core.serialization import dumps
from .transaction import Pending, asubmit, submit, waits_for_commit

#: Options of a task that are not BullMQ job options.
TASK_OPTIONS = ("queue", "on_commit", "database", "process", "outbox")
#: ``opts`` key marking a job of Django's tasks framework (``django_bullq.backends``).
DJANGO_TASK_OPTION = "djangoTask"
#: BullMQ job options a task accepts (fields of :class:`JobOptions`).
JOB_OPTIONS = tuple(name for name in JobOptions.__dataclass_fields__)

#: The decorated function's parameters (``Task[P, R]``).
P = ParamSpec("P")
#: The decorated function's return type (a coroutine type for ``async def`` functions).
R = TypeVar("R")

_current_job: contextvars.ContextVar[Job | None] = contextvars.ContextVar(
    "django_bullq_current_job", default=None
)


class TaskRegistryError(BullqError, ValueError):
    """Two different functions claim one job name."""


class TaskRegistry:
    """Job name -> :class:`Task`. The worker's dispatcher looks tasks up here."""

    def __init__(self) -> None:
        self._tasks: dict[str, Task[..., Any]] = {}
        self._lock = threading.Lock()

    def register(self, task: Task[..., Any]) -> None:
        """Add ``task`` under ``task.name``.

        Re-registering the same function (a module imported twice) replaces the entry.

        Raises:
            TaskRegistryError: another function is already registered under that name.
        """
        with self._lock:
            known = self._tasks.get(task.name)
            if known is not None and _origin(known.func) != _origin(task.func):
                raise TaskRegistryError(
                    f"job name {task.name!r} is already bound to {_origin(known.func)}; "
                    f"cannot bind it to {_origin(task.func)} too"
                )
            self._tasks[task.name] = task

    def unregister(self, name: str) -> None:
        """Forget the task named ``name`` (no error when absent)."""
        with self._lock:
            self._tasks.pop(name, None)

    def get(self, name: str) -> Task[..., Any] | None:
        """The task bound to job name ``name``, or None."""
        return self._tasks.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._tasks

    def names(self) -> list[str]:
        """Registered job names, sorted."""
        return sorted(self._tasks)


#: The process-wide registry filled by ``@task``.
registry = TaskRegistry()


def _origin(func: Callable[..., Any]) -> str:
    return f"{func.__module__}.{func.__qualname__}"


class PendingEnqueue(Pending[Job]):
    """What ``enqueue`` returns inside ``transaction.atomic()`` while it waits for the commit.

    Attributes:
        task_name: the job name. args / kwargs: the call (``args == [data]`` for raw tasks).
        id: the job's id, given in advance (the task's ``job_id`` option, else a UUID v4):
            after the commit the job is in Redis under exactly this id.
        queue_name: the job's queue. database: the alias whose commit it waits for.

    :attr:`job` is the :class:`Job` once the transaction committed and the job was added (None
    before, and forever if the transaction rolled back); :attr:`state` says which.
    """

    id: str  # always known: given in advance by submit()

    def __init__(self, task_name: str, args: list[Any], kwargs: dict[str, Any]) -> None:
        super().__init__(f"job {task_name!r}", id="")
        self.task_name = task_name
        self.args = args
        self.kwargs = kwargs

    @property
    def job(self) -> Job | None:
        """The :class:`Job` once it is in Redis, else None."""
        return self.result

    @property
    def enqueued(self) -> bool:
        """True once the job is in Redis."""
        return self.done

    def wait(self, timeout: float | None = 30.0) -> Any:
        """Block until the job finishes; return its return value (as :meth:`Job.wait`).

        Call it after the transaction committed. With the outbox, a job whose move after the
        commit failed (or never ran) is waited for under its id once ``runworker``'s relay
        added it.

        Args:
            timeout: seconds, None for no limit.

        Raises:
            NotEnqueuedError: no job to wait for: ``reason`` ``"pending"`` (the transaction
                has not committed yet: waiting inside it would never end), ``"rolled back"``,
                ``"failed"`` (the add after the commit raised) or ``"outbox"`` (not relayed
                yet). JobFailedError / JobTimeoutError: as :meth:`Job.wait`.
        """
        return self._job_to_wait().wait(timeout)

    async def await_result(self, timeout: float | None = 30.0) -> Any:
        """Async twin of :meth:`wait`."""
        return await self._job_to_wait().await_result(timeout)

    def _job_to_wait(self) -> Job:
        if self.state in ("outbox", "rolled back") and self.id is not None:
            # committed to the outbox and relayed by runworker since (a rolled-back id never
            # reaches Redis): the job is there under the id given in advance
            job = get_queue(self.queue_name).get_job(self.id)
            if job is not None:
                return job
        return self.outcome()


class Task(Generic[P, R]):
    """A function that runs as a BullMQ job. Built by :func:`task`; do not instantiate.

    Calling the task runs the function synchronously in the caller (no Redis involved).
    ``Task[P, R]`` carries the function's parameters ``P`` and return type ``R``, so type
    checkers check calls, :meth:`enqueue`, :meth:`aenqueue` and :meth:`node` against the
    decorated function's signature.

    Attributes:
        func: the wrapped function (sync or ``async def``).
        name: the job name (``module.qualname`` unless given).
        raw: True when the function receives the job's raw ``data`` as its single argument.
        queue_name: the queue (None: ``BULLQ["DEFAULT_QUEUE"]`` at enqueue time).
        on_commit: inside ``transaction.atomic(using=database)`` add the job only after the
            commit of that database's transaction.
        database: the database alias whose transaction ``on_commit`` waits for.
        outbox: None follows ``BULLQ["OUTBOX"]["ENABLED"]``; True / False: this task's
            on-commit enqueues do / do not go through the transactional outbox.
        job_options: BullMQ job options given for this task, as :class:`JobOptions` field names.
        process: run the function in a separate process (CPU-bound work; sync functions only).
    """

    def __init__(
        self,
        func: Callable[P, R],
        *,
        name: str | None = None,
        raw: bool = False,
        queue: str | None = None,
        on_commit: bool = True,
        database: str = "default",
        job_options: dict[str, Any] | None = None,
        process: bool = False,
        outbox: bool | None = None,
    ) -> None:
        if not callable(func):
            raise TypeError("@task must decorate a function")
        self.func: Callable[P, R] = func
        self.name = name or _origin(func)
        self.raw = raw
        self.queue_name = queue
        self.on_commit = on_commit
        self.database = database
        self.outbox = outbox
        self.job_options = dict(job_options or {})
        self.is_async = inspect.iscoroutinefunction(func)
        self.process = process
        if process and self.is_async:
            raise ValueError(f"task {self.name!r}: process=True needs a sync function")
        self._signature: inspect.Signature | None = None
        functools.update_wrapper(self, func)
        _check_job_options(self.name, self.job_options)

    def __repr__(self) -> str:
        return f"<Task {self.name}>"

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        """Run the function here and now (like Django's ``Task.call``)."""
        return self.func(*args, **kwargs)

    def call(self, *args: P.args, **kwargs: P.kwargs) -> R:
        """Same as calling the task: run the function synchronously."""
        return self.func(*args, **kwargs)

    def using(self, **options: Any) -> Task[P, R]:
        """A copy with other options; the registry still maps the name to the original.

        Args:
            options: ``queue``, ``on_commit``, ``database``, ``outbox``, ``process`` and BullMQ
                job options
                (``attempts``, ``backoff``, ``delay`` (ms, timedelta or datetime), ``priority``
                (1 most urgent .. 2_097_151; 0 none), ``lifo``, ``job_id``,
                ``remove_on_complete``, ``remove_on_fail``, ...). ``None`` drops an option.

        Raises:
            TypeError: an unknown option (``name`` and ``raw`` cannot change).
        """
        unknown = set(options) - set(TASK_OPTIONS) - set(JOB_OPTIONS)
        if unknown:
            raise TypeError(f"unknown task option(s): {', '.join(sorted(unknown))}")
        job_options = dict(self.job_options)
        for key, value in options.items():
            if key in JOB_OPTIONS:
                if value is None:
                    job_options.pop(key, None)
                else:
                    job_options[key] = value
        return Task(
            self.func,
            name=self.name,
            raw=self.raw,
            queue=options.get("queue", self.queue_name),
            on_commit=options.get("on_commit", self.on_commit),
            database=options.get("database", self.database),
            job_options=job_options,
            process=options.get("process", self.process),
            outbox=options.get("outbox", self.outbox),
        )

    # --- enqueue ---------------------------------------------------------------------------

    def enqueue(self, *args: P.args, **kwargs: P.kwargs) -> Job | PendingEnqueue:
        """Add a job that will call this task with ``args`` / ``kwargs`` (raw tasks: one value).

        Returns:
            The core :class:`Job`; inside ``transaction.atomic(using=database)`` with
            ``on_commit`` (default), a :class:`PendingEnqueue` whose ``id`` is the job's id at
            once and whose ``job`` is set when that transaction commits (with the outbox: when
            this process moved the row to Redis); its ``wait()`` works after the commit.

        Raises:
            SerializationError: an argument is not JSON (the message names the task and the
                argument: its position or keyword).
            TypeError: wrong call for a raw task.
            InvalidNameError: a bad queue name or job id.
            ValueError: bad options.
            redis.RedisError: Redis unreachable.
            ConfigurationError: ``outbox=True`` while the outbox is disabled.
        """
        data, options = self._prepare(args, kwargs)
        pending = PendingEnqueue(self.name, list(args), dict(kwargs))
        added = submit(
            self.queue_name,
            self.name,
            data,
            _resolve(options),
            database=self.database,
            on_commit=self.on_commit,
            outbox=self.outbox,
            pending=pending,
        )
        return added if isinstance(added, Job) else pending

    async def aenqueue(self, *args: P.args, **kwargs: P.kwargs) -> Job | PendingEnqueue:
        """Async twin of :meth:`enqueue` (same returns and errors)."""
        if waits_for_commit(self.database, self.on_commit):
            return self.enqueue(*args, **kwargs)
        data, options = self._prepare(args, kwargs)
        job = await asubmit(
            self.queue_name,
            self.name,
            data,
            _resolve(options),
            database=self.database,
            on_commit=False,
        )
        assert isinstance(job, Job)
        return job

    def _queue(self) -> Queue:
        return get_queue(self.queue_name)

    def _prepare(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        if self.raw:
            if len(args) != 1 or kwargs:
                raise TypeError(
                    f"raw task {self.name!r} is enqueued with exactly one value "
                    f"(the job data), got {len(args)} positional and "
                    f"{len(kwargs)} keyword argument(s)"
                )
            dumps(args[0], f"data of task {self.name!r}")
            return args[0], dict(self.job_options)
        for index, value in enumerate(args):
            dumps(value, f"argument {index} (positional) of task {self.name!r}")
        for key, value in kwargs.items():
            dumps(value, f"argument {key!r} (keyword) of task {self.name!r}")
        return {"args": list(args), "kwargs": dict(kwargs)}, dict(self.job_options)

    # --- job schedulers --------------------------------------------------------------------

    def schedule(
        self,
        scheduler_id: str,
        *,
        every: int | None = None,
        cron: str | None = None,
        tz: str | None = None,
        args: Any = (),
        kwargs: Any = None,
        **repeat: Any,
    ) -> Job | Pending[Job | None] | None:
        """Create or replace job scheduler ``scheduler_id`` that runs this task repeatedly.

        Follows the task's ``on_commit`` / ``database`` / ``outbox`` like :meth:`enqueue`:
        inside ``transaction.atomic(using=database)`` the scheduler is created when that
        transaction commits (through the outbox when it is on), and a rollback creates none.

        Args:
            every: ms between runs; or cron: a cron pattern (6 fields = seconds first) read in
                ``tz`` (IANA name, default UTC). args / kwargs: the call (raw tasks: one value).
            repeat: ``limit``, ``start_date`` / ``end_date`` (ms or aware datetime),
                ``immediately``, ``offset`` (ms) — see ``Queue.upsert_job_scheduler``.

        Returns:
            The pending iteration job, or None when the schedule is already over; inside
            ``atomic()``, a :class:`~django_bullq.producer.transaction.Pending` whose ``result`` is
            that (after the commit).

        Raises:
            ValueError: bad schedule values (checked at the call, also when it waits).
            TypeError: bad schedule argument types.
            SerializationError: arguments not JSON.
        """
        from .schedules import schedule

        return schedule(
            self, scheduler_id, every=every, cron=cron, tz=tz, args=args, kwargs=kwargs, **repeat
        )

    async def aschedule(
        self,
        scheduler_id: str,
        *,
        every: int | None = None,
        cron: str | None = None,
        tz: str | None = None,
        args: Any = (),
        kwargs: Any = None,
        **repeat: Any,
    ) -> Job | Pending[Job | None] | None:
        """Async twin of :meth:`schedule`."""
        from .schedules import aschedule

        return await aschedule(
            self, scheduler_id, every=every, cron=cron, tz=tz, args=args, kwargs=kwargs, **repeat
        )

    # --- running ---------------------------------------------------------------------------

    def signature(self) -> inspect.Signature:
        """The wrapped function's signature (cached)."""
        if self._signature is None:
            self._signature = inspect.signature(self.func)
        return self._signature

    # --- flows (docs/flows.md) -------------------------------------------------------------

    def node(self, *args: P.args, **kwargs: P.kwargs) -> dict[str, Any]:
        """A flow node calling this task with ``args`` / ``kwargs`` (raw tasks: one value).

        Returns:
            ``{"name", "queue_name", "data", "opts", "children": []}`` for
            :class:`~django_bullq.FlowProducer` / :func:`~django_bullq.chain`; append child
            nodes to ``children``. The task's job options are the node's ``opts``.

        Raises:
            SerializationError: an argument is not JSON. TypeError: wrong call for a raw task.
        """
        data, options = self._prepare(args, kwargs)
        return {
            "name": self.name,
            "queue_name": self._queue().name,
            "data": data,
            "opts": _resolve(options),
            "children": [],
        }


def _check_job_options(name: str, options: dict[str, Any]) -> None:
    unknown = set(options) - set(JOB_OPTIONS)
    if unknown:
        raise TypeError(f"task {name!r}: unknown job option(s): {', '.join(sorted(unknown))}")
    probe = dict(options)
    if isinstance(probe.get("delay"), datetime):
        probe.pop("delay")  # validated at enqueue, when naive ones are made aware
    try:
        JobOptions(**probe).validate()
    except ValueError as exc:
        raise ValueError(f"task {name!r}: {exc}") from exc


def aware(value: datetime) -> datetime:
    """``value`` if aware; a naive one is read as wall-clock time in ``settings.TIME_ZONE``.

    The UTC offset is the one in effect at that instant (``zoneinfo``), not "does the zone
    observe DST" (case B03). For a wall time that occurs twice (DST end) the first is used.
    """
    if timezone.is_aware(value):
        return value
    made: datetime = timezone.make_aware(value, timezone.get_default_timezone())
    return made


def _resolve(options: dict[str, Any]) -> dict[str, Any]:
    delay = options.get("delay")
    if isinstance(delay, datetime):
        options = {**options, "delay": aware(delay)}
    return options


@overload
def task(func: Callable[P, R], /) -> Task[P, R]: ...


@overload
def task(
    *,
    name: str | None = None,
    raw: bool = False,
    queue: str | None = None,
    on_commit: bool = True,
    database: str = "default",
    process: bool = False,
    outbox: bool | None = None,
    **job_options: Any,
) -> Callable[[Callable[P, R]], Task[P, R]]: ...


def task(
    func: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    raw: bool = False,
    queue: str | None = None,
    on_commit: bool = True,
    database: str = "default",
    process: bool = False,
    outbox: bool | None = None,
    **job_options: Any,
) -> Any:
    """Make a function a task: ``@task`` or ``@task(queue=..., attempts=3, ...)``.

    Args:
        func: the function (sync or ``async def``) when used as ``@task``.
        name: job name; default the import path ``module.qualname``. Use the name another
            BullMQ producer adds jobs under to consume them.
        raw: the function receives the job's ``data`` as its only argument, and ``enqueue``
            takes that one value (for jobs produced by Node / Python BullMQ).
        queue: queue name (default ``BULLQ["DEFAULT_QUEUE"]``, read at enqueue time).
        on_commit: inside ``transaction.atomic(using=database)`` add the job after that
            transaction commits (default); a rollback drops it.
        database: database alias whose transaction ``on_commit`` follows.
        outbox: True / False: on-commit enqueues of this task do / do not go through the
            transactional outbox; None (default) follows ``BULLQ["OUTBOX"]["ENABLED"]``.
        process: run the (sync) function in a separate process of a ``spawn`` pool inside
            the worker, for CPU-bound work; arguments and result stay JSON (docs/workers.md).
        job_options: BullMQ job options, :class:`JobOptions` field names: ``attempts``,
            ``backoff`` (ms or ``{"type": "fixed"|"exponential", "delay": ms, "jitter": 0..1}``),
            ``delay`` (ms, ``timedelta``, or ``datetime``: naive ones are in ``TIME_ZONE``),
            ``priority`` (1 most urgent .. 2_097_151; 0 none), ``lifo``, ``job_id``,
            ``remove_on_complete``, ``remove_on_fail``, ``keep_logs``, ``timeout`` (ms; the
            job is cancelled past it, docs/cancellation.md), ``extra``.

    Returns:
        A :class:`Task` (or a decorator making one), registered under its name.

    Raises:
        TypeError: unknown option. ValueError: invalid option value.
        TaskRegistryError: another function already uses the name.
    """

    def decorate(function: Callable[..., Any]) -> Task[..., Any]:
        made = Task(
            function,
            name=name,
            raw=raw,
            queue=queue,
            on_commit=on_commit,
            database=database,
            job_options=job_options,
            process=process,
            outbox=outbox,
        )
        registry.register(made)
        return made

    if func is not None:
        return decorate(func)
    return decorate


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


# --- the worker side -----------------------------------------------------------------------


def split_call(
    name: str, data: Any, signature: inspect.Signature, leading: tuple[Any, ...] = ()
) -> tuple[list[Any], dict[str, Any]]:
    """``{"args": [...], "kwargs": {...}}`` job data as a call checked against ``signature``.

    Args:
        name: task name (for messages).
        data: the job's data.
        signature: the function's signature.
        leading: arguments passed before the job's ``args`` (a Django task's context).

    Raises:
        UnrecoverableError: another shape, or a call the signature does not accept.
    """
    if not isinstance(data, dict) or set(data) - {"args", "kwargs"}:
        shape = type(data).__name__ if not isinstance(data, dict) else f"keys {sorted(data)}"
        raise UnrecoverableError(
            f'job data for task {name!r} must be {{"args": [...], "kwargs": {{...}}}}, '
            f"got {shape} (bind raw producers with @task(name=..., raw=True))"
        )
    args, kwargs = data.get("args", []), data.get("kwargs", {})
    if not isinstance(args, list) or not isinstance(kwargs, dict):
        raise UnrecoverableError(
            f"job data for task {name!r}: 'args' must be a list and 'kwargs' an object"
        )
    try:
        signature.bind(*leading, *args, **kwargs)
    except TypeError as exc:
        raise UnrecoverableError(
            f"job data does not match the signature of task {name!r}: {exc}"
        ) from exc
    return args, kwargs


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
        from ..worker.process_pool import run_in_process

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

    from ..worker.group import after_job, before_job

    # The async ORM runs in asgiref's thread-sensitive thread: clean *its* connections.
    await sync_to_async(before_job)(job)
    token = _current_job.set(job)
    try:
        return await call()
    finally:
        _current_job.reset(token)
        await sync_to_async(after_job)(job)


__all__ = [
    "PendingEnqueue",
    "Task",
    "TaskRegistry",
    "TaskRegistryError",
    "arate_limit",
    "current_job",
    "process_job",
    "rate_limit",
    "registry",
    "task",
]
