"""Adding a job now, after a database transaction commits, or through the transactional outbox.

The one enqueue path of the Django layer: ``@task`` (:mod:`django_bullq.tasks`) and the
``django.tasks`` backend (:mod:`django_bullq.backends`) both call :func:`submit`.

* Outside ``transaction.atomic(using=database)`` (or with ``on_commit=False``) the job is added
  at once.
* Inside it, the add waits for the commit of **that** database's transaction
  (``transaction.on_commit(using=database)``); a rollback drops it. An atomic block open on
  another database does not matter.
* With the outbox (``BULLQ["OUTBOX"]["ENABLED"]``, or ``outbox=True``) the job is written as an
  :class:`~django_bullq.models.OutboxJob` row in that same transaction instead; after the commit
  this process moves it to Redis, and ``runworker`` relays rows a crash left behind
  (:mod:`django_bullq.outbox`). A committed enqueue is never lost.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

from django.db import transaction

from .conf import ConfigurationError, bullq_settings, get_queue
from .core.job import Job
from .core.serialization import dumps, loads

logger = logging.getLogger("django_bullq.enqueue")

#: Called with the job once it is in Redis.
OnAdded = Callable[[Job], None]


def outbox_enabled(choice: bool | None = None) -> bool:
    """Whether on-commit enqueues go through the outbox.

    Args:
        choice: a task's own ``outbox`` option; None follows ``BULLQ["OUTBOX"]["ENABLED"]``.

    Raises:
        ConfigurationError: ``choice`` is True while the outbox is disabled (no ``runworker``
            would relay the rows a crash leaves behind).
    """
    enabled = bool(bullq_settings.OUTBOX["ENABLED"])
    if choice and not enabled:
        raise ConfigurationError("outbox=True needs BULLQ['OUTBOX']['ENABLED'] = True "
                                 "(runworker relays the outbox only then)")
    return enabled if choice is None else bool(choice)


def waits_for_commit(database: str, on_commit: bool) -> bool:
    """True when an enqueue now would wait for the commit of ``database``'s transaction."""
    return on_commit and transaction.get_connection(database).in_atomic_block


def submit(queue_name: str | None, name: str, data: Any, options: dict[str, Any], *,
           database: str = "default", on_commit: bool = True, outbox: bool | None = None,
           on_added: OnAdded | None = None) -> Job | None:
    """Add job ``name`` with ``data`` to queue ``queue_name`` now or after the commit.

    Args:
        queue_name: queue (None: ``BULLQ["DEFAULT_QUEUE"]``). name: job name. data: JSON value.
        options: :class:`~django_bullq.core.options.JobOptions` fields (``delay`` as ms,
            timedelta or aware datetime). The outbox needs no ``job_id``: it makes one.
        database: the alias whose transaction an on-commit add waits for.
        on_commit: inside ``atomic(using=database)``, wait for its commit.
        outbox: see :func:`outbox_enabled`.
        on_added: called with the :class:`Job` once it is in Redis (at once, or after the
            commit in this process; not when ``runworker``'s relay moves the row).

    Returns:
        The job when it was added at once; None when it waits for the commit.

    Raises:
        SerializationError: data not JSON. ValueError / InvalidNameError: bad options.
        ConfigurationError: see :func:`outbox_enabled`. redis.RedisError: Redis unreachable
            (at once only: after the commit a failed outbox move is left to the relay).
    """
    queue = get_queue(queue_name)
    if not waits_for_commit(database, on_commit):
        job = queue.add(name, data, **options)
        _notify(on_added, job)
        return job
    data = loads(dumps(data, f"data of job {name!r}"))  # the values as of this call
    if outbox_enabled(outbox):
        from . import outbox as outbox_mod

        row = outbox_mod.write(database, queue.name, name, data, options)
        transaction.on_commit(functools.partial(_relay_after_commit, database, row.pk, on_added),
                              using=database, robust=True)
        return None

    def add_after_commit() -> None:
        _notify(on_added, queue.add(name, data, **options))

    transaction.on_commit(add_after_commit, using=database)
    return None


async def asubmit(queue_name: str | None, name: str, data: Any, options: dict[str, Any], *,
                  database: str = "default", on_commit: bool = True,
                  outbox: bool | None = None, on_added: OnAdded | None = None) -> Job | None:
    """Async twin of :func:`submit`: a native async add when it does not wait for a commit."""
    if waits_for_commit(database, on_commit):
        # Only reachable from sync code running an event loop inside atomic(): as submit.
        return submit(queue_name, name, data, options, database=database,
                      on_commit=on_commit, outbox=outbox, on_added=on_added)
    job = await get_queue(queue_name).aadd(name, data, **options)
    _notify(on_added, job)
    return job


def _relay_after_commit(database: str, pk: int, on_added: OnAdded | None) -> None:
    from .outbox import relay_row

    job = relay_row(database, pk)
    if job is not None:
        _notify(on_added, job)


def _notify(on_added: OnAdded | None, job: Job) -> None:
    if on_added is not None:
        on_added(job)


__all__ = ["asubmit", "outbox_enabled", "submit", "waits_for_commit"]
