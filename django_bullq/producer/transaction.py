"""Writing to Redis now, after a database transaction commits, or through the transactional outbox.

The one on-commit rule of the Django layer. ``@task`` enqueues
(:mod:`django_bullq.producer.task`) and the ``django.tasks`` backend
(:mod:`django_bullq.backends`) call :func:`submit`; flows (:mod:`django_bullq.producer.flows`)
and ``Task.schedule`` (:mod:`django_bullq.producer.schedules`) call :func:`defer`,
which :func:`submit` uses too.

* Outside ``transaction.atomic(using=database)`` (or with ``on_commit=False``) the write happens
  at once.
* Inside it, the write waits for the commit of **that** database's transaction
  (``transaction.on_commit(using=database)``); a rollback drops it. An atomic block open on
  another database does not matter. The caller gets a :class:`Pending` at once.
* With the outbox (``BULLQ["OUTBOX"]["ENABLED"]``, or ``outbox=True``) the write is stored as an
  :class:`~django_bullq.models.OutboxJob` row (kind job, flow or scheduler) in that same
  transaction instead; after the commit this process moves it to Redis, and ``runworker``
  relays rows a crash left behind (:mod:`django_bullq.producer.outbox`). A committed write is
  never lost.
"""

from __future__ import annotations

import functools
import logging
import uuid
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from django.db import transaction

from ..conf import bullq_settings, get_queue
from ..core.errors import NotEnqueuedError
from ..core.gc_pause import paused_gc
from ..core.job import Job
from ..core.serialization import Encoded, data_text, loads
from ..exceptions import ConfigurationError

logger = logging.getLogger("django_bullq.enqueue")

#: Called with the job once it is in Redis.
#: Called with the added :class:`Job` once it is in Redis.
OnAdded = Callable[[Job], None]


def new_job_id() -> str:
    """The job id given in advance to a job whose add waits for a commit: a UUID v4 string.

    BullMQ 6 gives flow nodes such ids too; they hold no ``:``, so they are valid custom ids.
    """
    return str(uuid.uuid4())


class Pending[T]:
    """A write to Redis that waits for the commit of ``database``'s transaction.

    Returned (or wrapped, as :class:`~django_bullq.producer.task.PendingEnqueue`) by ``enqueue``,
    ``add_flow`` / ``add_chain`` and ``Task.schedule`` inside ``transaction.atomic()``.

    Attributes:
        what: the write, for messages (``"job 'app.tasks.f' (id ...)"``).
        database: the alias whose commit it waits for.
        id: the job id the write gives, known before the commit (an enqueue's job, a flow's
            root job); None for a scheduler (iteration ids depend on the time of the upsert).
        queue_name: the queue of that job (None for a scheduler).
        result: what the write returned once it ran (a Job, a JobNode, or for a scheduler the
            first iteration's Job or None); None before.
        error: the exception the write raised after the commit (state ``"failed"``).
    """

    def __init__(self, what: str, *, id: str | None = None, queue_name: str | None = None) -> None:
        self.what = what
        self.id = id
        self.queue_name = queue_name
        self.database = ""
        self.result: T | None = None
        self.error: BaseException | None = None
        #: pk of the outbox row that carries the write, when it went through the outbox
        self.outbox_pk: int | None = None
        self._state = "pending"
        self._hook: Callable[[], None] | None = None
        self._connection: Any = None
        self._listeners: list[Callable[[T], None]] = []

    def __repr__(self) -> str:
        return f"<Pending {self.what}: {self.state}>"

    @property
    def state(self) -> str:
        """``"pending"`` (the transaction is still open), ``"done"`` (written; ``result`` set),
        ``"failed"`` (the write after the commit raised), ``"outbox"`` (committed as an outbox
        row this process could not move; ``runworker``'s relay will) or ``"rolled back"`` (the
        transaction rolled back, or its commit stopped before this write: nothing written)."""
        if self._state != "pending":
            return self._state
        hooks = getattr(self._connection, "run_on_commit", ())
        if any(entry[1] is self._hook for entry in hooks):
            return "pending"  # Django keeps the callback until the commit; a rollback drops it
        return "rolled back"

    @property
    def done(self) -> bool:
        """True once the write is in Redis."""
        return self._state == "done"

    def outcome(self) -> T:
        """The write's result once it is in Redis.

        Raises:
            NotEnqueuedError: no result; its ``reason`` is the :attr:`state` (``"pending"``,
                ``"rolled back"``, ``"failed"`` with the error as ``__cause__``, ``"outbox"``).
        """
        state = self.state
        if state != "done":
            raise NotEnqueuedError(self.what, self.database, state) from self.error
        return self.result  # type: ignore[return-value]  # None only for an over schedule

    def on_done(self, listener: Callable[[T], None]) -> None:
        """Call ``listener(result)`` once the write is in Redis (after the commit)."""
        self._listeners.append(listener)

    # --- set by defer's commit hooks --------------------------------------------------------

    def _watch(self, database: str, hook: Callable[[], None]) -> None:
        self.database = database
        self._hook = hook
        self._connection = transaction.get_connection(database)

    def _finish(self, result: T) -> None:
        self.result = result
        self._state = "done"
        for listener in self._listeners:
            listener(result)

    def _fail(self, error: BaseException) -> None:
        self.error = error
        self._state = "failed"


def outbox_enabled(*, choice: bool | None = None) -> bool:
    """Whether on-commit writes go through the outbox.

    Args:
        choice: a task's (or call's) own ``outbox`` option; None follows
            ``BULLQ["OUTBOX"]["ENABLED"]``.

    Raises:
        ConfigurationError: ``choice`` is True while the outbox is disabled (no ``runworker``
            would relay the rows a crash leaves behind).
    """
    enabled = bool(bullq_settings.OUTBOX["ENABLED"])
    if choice and not enabled:
        raise ConfigurationError(
            "outbox=True needs BULLQ['OUTBOX']['ENABLED'] = True "
            "(runworker relays the outbox only then)"
        )
    return enabled if choice is None else bool(choice)


def waits_for_commit(database: str, *, on_commit: bool) -> bool:
    """True when a write now would wait for the commit of ``database``'s transaction."""
    return on_commit and transaction.get_connection(database).in_atomic_block


def defer[T](
    write: Callable[[], T],
    to_outbox: Callable[[], int],
    pending: Pending[T],
    *,
    database: str = "default",
    on_commit: bool = True,
    outbox: bool | None = None,
) -> T | Pending[T]:
    """Run ``write()`` now, or after the commit of ``database``'s transaction.

    Args:
        write: the write to Redis (returns its result).
        to_outbox: stores the write as an outbox row on ``database`` and returns its pk
            (called only inside the transaction with the outbox on).
        pending: what the caller gets when the write waits (its ``what`` / ``id`` set).
        database: the alias whose transaction the write follows.
        on_commit: inside ``atomic(using=database)``, wait for its commit.
        outbox: see :func:`outbox_enabled`.

    Returns:
        ``write()``'s result when it ran at once; else ``pending``, completed after the commit.

    Errors of ``write()`` are raised here when it runs at once. After the commit, a write
    without the outbox raises from the commit (as Django raises errors of ``on_commit``
    callbacks; ``pending.state`` is then ``"failed"``), and a failed outbox move is logged and
    left to the relay (``"outbox"``).

    Raises:
        ConfigurationError: see :func:`outbox_enabled`.
    """
    if not waits_for_commit(database, on_commit=on_commit):
        return write()
    hook: Callable[[], None]
    if outbox_enabled(choice=outbox):
        pending.outbox_pk = to_outbox()
        hook = functools.partial(_relay_after_commit, database, pending.outbox_pk, pending)
        transaction.on_commit(hook, using=database, robust=True)
    else:
        hook = functools.partial(_write_after_commit, write, pending)
        transaction.on_commit(hook, using=database)
    pending._watch(database, hook)
    return pending


class JobAdd[PendingT: "Pending[Job]"](NamedTuple):
    """One job to add now or after the commit: what :func:`submit` / :func:`asubmit` take
    (a named tuple: cheap to build on the enqueue hot path).

    Its fields (the named tuple documents each once, below):

    - ``queue_name``: queue (None: ``BULLQ["DEFAULT_QUEUE"]``); ``name``: job name; ``data``:
      a JSON value.
    - ``options``: :class:`~django_bullq.core.options.JobOptions` fields (``delay`` as ms,
      timedelta or aware datetime). Without ``job_id``, a job that waits for the commit gets
      :func:`new_job_id` in advance (``Pending.id``).
    - ``pending``: makes what the caller gets when the add waits for the commit, from the add
      itself (called only then, so an add at once builds none). A function shared by every
      add of a producer, not an object per add: an ``enqueue_many`` of 50,000 jobs held a
      ``partial`` each, and the full garbage collections over them were a quarter of its CPU.
    - ``database``: the alias whose transaction an on-commit add waits for; ``on_commit``:
      inside ``atomic(using=database)``, wait for its commit; ``outbox``: see
      :func:`outbox_enabled`.
    - ``on_added``: called with the :class:`Job` once it is in Redis (at once, or after the
      commit in this process; not when ``runworker``'s relay moves the row).
    """

    queue_name: str | None
    name: str
    data: Any
    options: dict[str, Any]
    pending: Callable[[JobAdd[PendingT]], PendingT]
    database: str = "default"
    on_commit: bool = True
    outbox: bool | None = None
    on_added: OnAdded | None = None

    def waits(self) -> bool:
        """True when the add waits for the commit of :attr:`database`'s transaction."""
        return waits_for_commit(self.database, on_commit=self.on_commit)

    def added(self, job: Job) -> Job:
        """``job``, added at once, after :attr:`on_added` saw it."""
        if self.on_added is not None:
            self.on_added(job)
        return job


def submit[PendingT: "Pending[Job]"](add: JobAdd[PendingT]) -> Job | PendingT:
    """Add the job of ``add`` to its queue now, or after the commit.

    Returns:
        The job when it was added at once; ``add.pending(add)`` when it waits for the commit.

    Raises:
        SerializationError: data not JSON. ValueError / InvalidNameError: bad options.
        ConfigurationError: see :func:`outbox_enabled`. redis.RedisError: Redis unreachable
            (at once only: after the commit a failed outbox move is left to the relay).
    """
    return (
        _add_on_commit(add)
        if add.waits()
        else add.added(get_queue(add.queue_name).add(add.name, add.data, **add.options))
    )


async def asubmit[PendingT: "Pending[Job]"](add: JobAdd[PendingT]) -> Job | PendingT:
    """Async twin of :func:`submit`: a native async add when it does not wait for a commit
    (one that waits, only reachable from sync code running an event loop inside ``atomic()``,
    is stored as :func:`submit` stores it)."""
    return (
        _add_on_commit(add)
        if add.waits()
        else add.added(await get_queue(add.queue_name).aadd(add.name, add.data, **add.options))
    )


def submit_many[PendingT: "Pending[Job]"](
    adds: list[JobAdd[PendingT]], chunk_size: int
) -> list[Job] | list[PendingT]:
    """Add the jobs of ``adds`` (one queue, database, ``on_commit`` and ``outbox`` for all)
    now, ``chunk_size`` per round trip (``Queue.add_bulk``), or after the commit as one batch.

    Returns:
        The jobs when added at once; one ``add.pending(add)`` each when they wait for the commit
        (without the outbox they are written once after the commit, ``chunk_size`` per round
        trip; with it they are stored in one ``bulk_create`` and moved together after it).

    Raises:
        As :func:`submit`; every job is validated before anything is written.
    """
    return (
        _many_on_commit(adds, chunk_size)
        if adds and adds[0].waits()
        else _added_many(
            adds, get_queue(_queue_of(adds)).add_bulk(_bulk(adds), chunk_size=chunk_size)
        )
    )


async def asubmit_many[PendingT: "Pending[Job]"](
    adds: list[JobAdd[PendingT]], chunk_size: int
) -> list[Job] | list[PendingT]:
    """Async twin of :func:`submit_many` (a native async bulk add when it does not wait)."""
    return (
        _many_on_commit(adds, chunk_size)
        if adds and adds[0].waits()
        else _added_many(
            adds, await get_queue(_queue_of(adds)).aadd_bulk(_bulk(adds), chunk_size=chunk_size)
        )
    )


def _queue_of(adds: list[JobAdd[Any]]) -> str | None:
    return adds[0].queue_name if adds else None


def _bulk(adds: list[JobAdd[Any]]) -> list[tuple[str, Any, dict[str, Any]]]:
    with paused_gc(len(adds)):  # as when the adds were built (see core/gc_pause.py)
        return [(add.name, add.data, add.options) for add in adds]


def _added_many(adds: list[JobAdd[Any]], jobs: list[Job]) -> list[Job]:
    return [add.added(job) for add, job in zip(adds, jobs, strict=True)]


def _many_on_commit[PendingT: "Pending[Job]"](
    adds: list[JobAdd[PendingT]], chunk_size: int
) -> list[PendingT]:
    """Keep the adds for the commit as one batch: one hook writes them all (or, with the
    outbox, rows stored now in one ``bulk_create`` are moved together)."""
    queue = get_queue(adds[0].queue_name)
    first = adds[0]
    prepared = [_prepare_pending(add, queue.name) for add in adds]
    pendings = [pending for pending, _, _ in prepared]
    jobs = [
        (add.name, data, options) for add, (_, data, options) in zip(adds, prepared, strict=True)
    ]

    def write() -> list[Job]:
        return queue.add_bulk(jobs, chunk_size=chunk_size)

    hook: Callable[[], None]
    if outbox_enabled(choice=first.outbox):
        from . import outbox as outbox_mod

        rows = [outbox_mod.job_row(queue.name, name, data, options) for name, data, options in jobs]
        pks = outbox_mod.write_many(first.database, rows)
        for pending, pk in zip(pendings, pks, strict=True):
            pending.outbox_pk = pk
        hook = functools.partial(
            _relay_many_after_commit, first.database, pks, chunk_size, pendings
        )
        transaction.on_commit(hook, using=first.database, robust=True)
    else:
        hook = functools.partial(_write_many_after_commit, write, pendings)
        transaction.on_commit(hook, using=first.database)
    for pending in pendings:
        pending._watch(first.database, hook)
    return pendings


def _prepare_pending[PendingT: "Pending[Job]"](
    add: JobAdd[PendingT], queue_name: str
) -> tuple[PendingT, Encoded, dict[str, Any]]:
    """What an add that waits for the commit keeps: its pending (id given in advance), its
    data as of this call and its options with that id."""
    name = add.name
    text = data_text(add.data, f"data of job {name!r}")[1]
    data = Encoded(loads(text), text)  # the values as of this call, encoded once
    options = {**add.options, "job_id": add.options.get("job_id") or new_job_id()}
    pending = add.pending(add)
    pending.what = f"job {name!r} (id {options['job_id']})"
    pending.id, pending.queue_name = options["job_id"], queue_name
    if add.on_added is not None:
        pending.on_done(add.on_added)
    return pending, data, options


def _write_many_after_commit(
    write: Callable[[], list[Job]], pendings: Sequence[Pending[Job]]
) -> None:
    try:
        jobs = write()
    except Exception as exc:
        for pending in pendings:
            pending._fail(exc)
        raise
    for pending, job in zip(pendings, jobs, strict=True):
        pending._finish(job)


def _relay_many_after_commit(
    database: str, pks: list[int], chunk_size: int, pendings: Sequence[Pending[Job]]
) -> None:
    from .outbox import relay_jobs

    def moved(jobs: list[Job]) -> None:
        for pending, job in zip(pendings, jobs, strict=True):
            pending._finish(job)

    if not relay_jobs(database, pks, chunk_size, moved):
        for pending in pendings:
            pending._state = "outbox"


def _add_on_commit[PendingT: "Pending[Job]"](add: JobAdd[PendingT]) -> PendingT:
    queue = get_queue(add.queue_name)
    name, database = add.name, add.database
    pending, data, options = _prepare_pending(add, queue.name)

    def to_outbox() -> int:
        from . import outbox as outbox_mod

        pk: int = outbox_mod.write(database, queue.name, name, data, options).pk
        return pk

    defer(
        functools.partial(queue.add, name, data, **options),
        to_outbox,
        pending,
        database=database,
        on_commit=add.on_commit,
        outbox=add.outbox,
    )
    return pending  # the add waits: defer keeps it for the commit


def _write_after_commit[T](write: Callable[[], T], pending: Pending[T]) -> None:
    try:
        result = write()
    except Exception as exc:
        pending._fail(exc)
        raise
    pending._finish(result)


def _relay_after_commit(database: str, pk: int, pending: Pending[Any]) -> None:
    from .outbox import relay_row

    if not relay_row(database, pk, pending._finish):
        pending._state = "outbox"


__all__ = [
    "JobAdd",
    "Pending",
    "asubmit",
    "asubmit_many",
    "defer",
    "new_job_id",
    "outbox_enabled",
    "submit",
    "submit_many",
    "waits_for_commit",
]
