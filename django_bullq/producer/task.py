"""The ``@task`` decorator and :class:`Task`: a function whose calls become BullMQ jobs.

* job name: the function's import path ``module.qualname`` (or ``name=...``);
* job data: ``{"args": [...], "kwargs": {...}}`` (strict JSON), or, for ``raw=True`` tasks, the
  single value passed to ``enqueue`` (so jobs added by Node / Python BullMQ producers fit).

``@task`` registers each task in :data:`django_bullq.producer.registry.registry`; the worker
side (``django_bullq.worker.dispatch``) runs them. See ``docs/tasks.md``.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any, ParamSpec, TypeVar, Unpack, overload

from ..conf import get_queue
from ..core.errors import SerializationError
from ..core.gc_pause import paused_gc
from ..core.job import Job
from ..core.options import JobOptions
from ..core.queue import Queue
from ..core.serialization import Encoded, dumps
from ..timeutils import aware
from .pending import BoundCall, EnqueueItem, PendingEnqueue, item_call, listed
from .registry import import_path, registry
from .schedules import ScheduleSpec, aschedule, schedule
from .transaction import JobAdd, Pending, asubmit, asubmit_many, submit, submit_many

#: Options of a task that are not BullMQ job options.
TASK_OPTIONS = ("queue", "on_commit", "database", "process", "outbox")
#: Keywords of :func:`task` that are :class:`Task` settings; the others are job options.
TASK_SETTINGS = ("name", "raw", *TASK_OPTIONS)
#: BullMQ job options a task accepts (fields of :class:`JobOptions`).
JOB_OPTIONS = tuple(name for name in JobOptions.__dataclass_fields__)

#: The decorated function's parameters (``Task[P, R]``).
P = ParamSpec("P")
#: The decorated function's return type (a coroutine type for ``async def`` functions).
R = TypeVar("R")


class Task[**P, R]:
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
        self.name = name or import_path(func)
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
        self._call_shapes: set[tuple[Any, ...]] = set()
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
            TypeError: a call the function does not take (checked once per call shape), or a
                wrong call for a raw task.
            InvalidNameError: a bad queue name or job id.
            ValueError: bad options.
            redis.RedisError: Redis unreachable.
            ConfigurationError: ``outbox=True`` while the outbox is disabled.
        """
        return submit(self._add(args, kwargs))

    async def aenqueue(self, *args: P.args, **kwargs: P.kwargs) -> Job | PendingEnqueue:
        """Async twin of :meth:`enqueue` (same returns and errors)."""
        return await asubmit(self._add(args, kwargs))

    def bind(self, *args: P.args, **kwargs: P.kwargs) -> BoundCall:
        """One call of this task, checked against the function's signature later, for
        :meth:`enqueue_many` (``task.bind(1, x=2)``)."""
        return BoundCall(args, dict(kwargs), self.name)

    def enqueue_many(
        self, calls: Iterable[EnqueueItem], *, chunk_size: int = 1000
    ) -> list[Job] | list[PendingEnqueue]:
        """Add one job per item of ``calls``, ``chunk_size`` per round trip (``Queue.add_bulk``,
        BullMQ ``addBulk``; RQ's ``enqueue_many``).

        Args:
            calls: each item a tuple of positional arguments (``(1,)``), a mapping of keyword
                arguments (``{"x": 1}``) or :meth:`bind`'s :class:`BoundCall`; for a raw task
                a 1-tuple or a bound call of the one value.
            chunk_size: jobs per write (one round trip each), >= 1.

        Returns:
            The jobs, in the order of ``calls``; inside ``transaction.atomic(using=database)``
            with ``on_commit``, a :class:`PendingEnqueue` each, the whole batch written once
            after the commit (with the outbox: stored as rows in one ``bulk_create`` and moved
            together after the commit, or by ``runworker``'s relay). A rollback writes none.

        Raises:
            SerializationError: an item's arguments are not JSON. TypeError: an item is not a
                call of the function's signature or not one of the item kinds. The message
                names the task and the item's index, and nothing of the batch is written.
            ValueError: bad options or ``chunk_size``, or a ``job_id`` option (every item
                would get that one id) with more than one item. ParentMissing: as
                ``Queue.add_bulk``.
            RedisUnavailableError: Redis unreachable (the chunks written before it stay).
        """
        return submit_many(self._adds(calls, chunk_size), chunk_size)

    async def aenqueue_many(
        self, calls: Iterable[EnqueueItem], *, chunk_size: int = 1000
    ) -> list[Job] | list[PendingEnqueue]:
        """Async twin of :meth:`enqueue_many` (same returns and errors)."""
        return await asubmit_many(self._adds(calls, chunk_size), chunk_size)

    def _adds(self, calls: Iterable[EnqueueItem], chunk_size: int) -> list[JobAdd[PendingEnqueue]]:
        """Every call of ``calls`` checked and made a :class:`JobAdd`, before any is written."""
        if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
            raise ValueError(
                f"task {self.name!r}: chunk_size must be an int >= 1, got {chunk_size!r}"
            )
        options = _resolve(dict(self.job_options))  # one dict for the batch: add_bulk shares it
        adds = []
        calls = listed(calls)
        with paused_gc(len(calls)):  # nothing built is a cycle (see core/gc_pause.py)
            for index, item in enumerate(calls):
                args, kwargs = item_call(self.name, index, item)
                adds.append(self._add(args, kwargs, index, options))
        if options.get("job_id") and len(adds) > 1:
            raise ValueError(
                f"task {self.name!r}: job_id {options['job_id']!r} would be the id of all "
                f"{len(adds)} items of enqueue_many (the first added, the others absorbed by "
                "it); give each job its own id with enqueue, or leave job_id unset"
            )
        return adds

    def _add(
        self,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        item: int | None = None,
        options: dict[str, Any] | None = None,
    ) -> JobAdd[PendingEnqueue]:
        """The :class:`JobAdd` of one call (``item``: its index in an ``enqueue_many``, whose
        ``options`` are resolved once for the batch)."""
        return JobAdd(
            self.queue_name,
            self.name,
            self._encoded(args, kwargs, item),
            _resolve(dict(self.job_options)) if options is None else options,
            _pending_of_raw if self.raw else _pending_of_call,
            database=self.database,
            on_commit=self.on_commit,
            outbox=self.outbox,
        )

    def _queue(self) -> Queue:
        return get_queue(self.queue_name)

    def _prepare(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        """The job data and options of one call."""
        return self._data(args, kwargs), dict(self.job_options)

    def _data(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """The job data of one call (``{"args": [...], "kwargs": {...}}``; raw tasks: the one
        value), checked as :meth:`_encoded` checks it."""
        return self._encoded(args, kwargs).value

    def _encoded(
        self, args: tuple[Any, ...], kwargs: dict[str, Any], item: int | None = None
    ) -> Encoded:
        """The job data of one call and its JSON text, encoded once (the queue stores that
        text); ``item``: its index in an ``enqueue_many``, named in the error.

        Raises:
            SerializationError: an argument is not JSON: the message names the task and the
                argument (its position or keyword), found by encoding the arguments one by one
                only once the data as a whole failed. TypeError: a call the function does not
                take, or a raw task not given one value.
        """
        if self.raw:
            if len(args) != 1 or kwargs:
                raise TypeError(
                    f"raw {self._where(item)} is enqueued with exactly one value "
                    f"(the job data), got {len(args)} positional and "
                    f"{len(kwargs)} keyword argument(s)"
                )
            value = args[0]
        else:
            self._check_call(args, kwargs, item)
            value = {"args": list(args), "kwargs": dict(kwargs)}
        try:  # the call's description is formatted for an error only (enqueue's hot path)
            return Encoded(value, dumps(value))
        except SerializationError:
            where = self._where(item)
            if not self.raw:  # the first argument that fails alone names itself
                for index, arg in enumerate(args):
                    dumps(arg, f"argument {index} (positional) of {where}")
                for key, arg in kwargs.items():
                    dumps(arg, f"argument {key!r} (keyword) of {where}")
            dumps(value, f"data of {where}")  # none fails alone (a keyword that is not Unicode)
            raise

    def _where(self, item: int | None) -> str:
        """This task, or item ``item`` of an ``enqueue_many``, as errors name it."""
        return f"task {self.name!r}" if item is None else f"task {self.name!r}, item {item}"

    # --- job schedulers --------------------------------------------------------------------

    def schedule(
        self, scheduler_id: str, **spec: Unpack[ScheduleSpec]
    ) -> Job | Pending[Job | None] | None:
        """Create or replace job scheduler ``scheduler_id`` that runs this task repeatedly.

        Follows the task's ``on_commit`` / ``database`` / ``outbox`` like :meth:`enqueue`:
        inside ``transaction.atomic(using=database)`` the scheduler is created when that
        transaction commits (through the outbox when it is on), and a rollback creates none.

        Args:
            scheduler_id: the scheduler's id (its iterations' ids start ``repeat:<id>:``).
            spec: the keywords of :class:`~django_bullq.producer.schedules.ScheduleSpec`:
                ``every``: ms between runs; or ``cron``: a cron pattern (6 fields = seconds
                first) read in ``tz`` (IANA name, default UTC). ``args`` / ``kwargs``: the call
                (raw tasks: one value). ``limit``, ``start_date`` / ``end_date`` (ms or aware
                datetime), ``immediately``, ``offset`` (ms) — see
                ``Queue.upsert_job_scheduler``.

        Returns:
            The pending iteration job, or None when the schedule is already over; inside
            ``atomic()``, a :class:`~django_bullq.producer.transaction.Pending` whose ``result`` is
            that (after the commit).

        Raises:
            ValueError: bad schedule values (checked at the call, also when it waits).
            TypeError: bad schedule argument types.
            SerializationError: arguments not JSON.
        """
        return schedule(self, scheduler_id, spec)

    async def aschedule(
        self, scheduler_id: str, **spec: Unpack[ScheduleSpec]
    ) -> Job | Pending[Job | None] | None:
        """Async twin of :meth:`schedule`."""
        return await aschedule(self, scheduler_id, spec)

    # --- running ---------------------------------------------------------------------------

    def _check_call(self, args: tuple[Any, ...], kwargs: dict[str, Any], item: int | None) -> None:
        """Raise TypeError (naming the task and ``item``) unless the function takes this call;
        each call shape (positional count, keyword names) is bound once (Celery's ``typing``
        check)."""
        shape = (len(args), *kwargs)
        if shape in self._call_shapes:
            return
        try:
            self.signature().bind(*args, **kwargs)
        except TypeError as exc:
            raise TypeError(f"{self._where(item)}: {exc}") from exc
        self._call_shapes.add(shape)

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


def _resolve(options: dict[str, Any]) -> dict[str, Any]:
    delay = options.get("delay")
    if isinstance(delay, datetime):
        options = {**options, "delay": aware(delay)}
    return options


@overload
def task[**P, R](func: Callable[P, R], /) -> Task[P, R]: ...


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


def task(func: Callable[..., Any] | None = None, /, **options: Any) -> Any:
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
        options: the keywords above and BullMQ job options, :class:`JobOptions` field names
            (the overloads give their types): ``attempts``,
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

    settings = {key: options.pop(key) for key in TASK_SETTINGS if key in options}

    def decorate(function: Callable[..., Any]) -> Task[..., Any]:
        made = Task(function, job_options=options, **settings)
        registry.register(made)
        return made

    if func is not None:
        return decorate(func)
    return decorate


def _pending_of_call(add: JobAdd[PendingEnqueue]) -> PendingEnqueue:
    """The pending of an add of a task's call, from its data (``{"args", "kwargs"}``, as
    :meth:`Task._encoded` made it at the call)."""
    call = add.data.value
    return PendingEnqueue(add.name, call["args"], call["kwargs"])  # it copies them


def _pending_of_raw(add: JobAdd[PendingEnqueue]) -> PendingEnqueue:
    """The pending of an add of a raw task: its one value is the job data."""
    return PendingEnqueue(add.name, [add.data.value], {})


__all__ = ["JOB_OPTIONS", "TASK_OPTIONS", "BoundCall", "PendingEnqueue", "Task", "task"]
