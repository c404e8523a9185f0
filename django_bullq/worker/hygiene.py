"""Database hygiene around each job, run in the thread that runs the job (cases B29 and B30).

* before a job: ``reset_queries()`` and ``close_old_connections()`` (honours ``CONN_MAX_AGE``
  and ``CONN_HEALTH_CHECKS``, drops connections that errored and are unusable);
* after a job: any transaction the job left open (an unexited ``atomic`` block, autocommit
  turned off, a pending rollback) is rolled back, then the same two calls.

Both cost nothing in a thread that holds no database connection: Django's
``connection_created`` signal marks the thread that opens one, and a thread whose last clean-up
left no connection open is known clean until it opens another. A thread never seen is treated
as holding one. :func:`async_thread_needs_hygiene` asks the same for asgiref's thread, where
the async ORM runs (:func:`clean_before` / :func:`clean_after` then run there).

:func:`in_flight` counts the sync jobs between the two hooks, for ``runworker``'s shutdown.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Sequence
from typing import Any

from django.db import close_old_connections, connections, reset_queries
from django.db.backends.signals import connection_created

from ..core.job import Job

logger = logging.getLogger("django_bullq.worker")

#: the queue name of the sync job each thread is running, by thread ident (a job thread runs
#: one job at a time). Each thread sets and pops only its own entry: dict item assignment and
#: pop are atomic, so no lock (a lock and a tuple per job were 4% of a no-op job's cost).
_in_flight: dict[int, str] = {}

#: idents of the threads known to hold no database connection (and no query log, no leaked
#: transaction): their last clean-up found none open, and none was opened since. Each thread
#: adds and removes only its own ident (set.add / discard are atomic).
_clean_threads: set[int] = set()
#: ident of asgiref's thread-sensitive thread (where the async ORM runs), once seen
_async_thread: int | None = None


def _on_connection_created(**_: Any) -> None:
    """``connection_created`` receiver: the thread opening a connection is no longer clean."""
    _clean_threads.discard(threading.get_ident())


connection_created.connect(_on_connection_created, dispatch_uid="django_bullq.worker.hygiene")


def thread_is_clean(ident: int | None = None) -> bool:
    """True when thread ``ident`` (default: this one) holds no DB connection, as far as this
    module knows (a thread never cleaned is not)."""
    return (threading.get_ident() if ident is None else ident) in _clean_threads


def async_thread_needs_hygiene() -> bool:
    """True unless asgiref's thread is known to hold no DB connection: an ``async def`` job
    then needs the hop there for :func:`clean_before` / :func:`clean_after`."""
    return _async_thread is None or _async_thread not in _clean_threads


def clean_before() -> None:
    """Before a job, in its thread: fresh query log, no stale DB connections (no-op in a clean
    thread)."""
    if threading.get_ident() in _clean_threads:
        return
    reset_queries()
    close_old_connections()


def clean_after(job: Job | None = None) -> None:
    """After a job, in its thread: roll back a leaked transaction, then :func:`clean_before`'s
    two calls; the thread counts as clean when no connection is left open."""
    ident = threading.get_ident()
    if ident in _clean_threads:
        return
    for conn in connections.all(initialized_only=True):
        discard_leaked_transaction(conn, job)
    reset_queries()
    close_old_connections()
    if all(conn.connection is None for conn in connections.all(initialized_only=True)):
        _clean_threads.add(ident)


def clean_before_async() -> None:
    """:func:`clean_before` in asgiref's thread (call it through ``sync_to_async``)."""
    global _async_thread
    _async_thread = threading.get_ident()
    clean_before()


def clean_after_async(job: Job | None = None) -> None:
    """:func:`clean_after` in asgiref's thread (call it through ``sync_to_async``)."""
    global _async_thread
    _async_thread = threading.get_ident()
    clean_after(job)


def before_job(job: Job) -> None:
    """Run before each job in its thread: fresh query log, no stale DB connections."""
    _in_flight[threading.get_ident()] = job.queue.name if job.queue is not None else ""
    clean_before()


def after_job(job: Job) -> None:
    """Run after each job in its thread: undo a leaked transaction, then clean up as before."""
    try:
        clean_after(job)
    finally:
        _in_flight.pop(threading.get_ident(), None)


def in_flight(queue_names: Sequence[str] | None = None) -> int:
    """Sync jobs whose function is still running in a thread (e.g. after the grace period),
    of the queues ``queue_names`` (default: of every queue in this process)."""
    running = tuple(_in_flight.values())  # one atomic copy: threads change it meanwhile
    if queue_names is None:
        return len(running)
    names = set(queue_names)
    return sum(1 for queue in running if queue in names)


def discard_leaked_transaction(conn: Any, job: Job | None = None) -> bool:
    """Roll back what a job left open on ``conn``; close the connection if that fails.

    A job that enters ``atomic()`` without leaving it, calls ``set_autocommit(False)`` or
    leaves ``needs_rollback`` set would otherwise poison every later job of this thread
    ("current transaction is aborted", TransactionManagementError).

    Returns:
        True when something had to be undone.
    """
    leaked = (
        conn.in_atomic_block
        or conn.needs_rollback
        or (conn.connection is not None and not conn.get_autocommit())
    )
    if not leaked:
        return False
    logger.warning(
        "job %s left an open transaction on database %r; rolling it back",
        job.id if job is not None else "?",
        conn.alias,
    )
    conn.atomic_blocks = []
    conn.savepoint_ids = []
    conn.in_atomic_block = False
    conn.needs_rollback = False
    conn.closed_in_transaction = False
    conn.run_on_commit = []
    try:
        if conn.connection is not None:
            conn.rollback()
            conn.set_autocommit(True)
    except Exception:
        logger.warning(
            "database %r: rollback failed, closing the connection", conn.alias, exc_info=True
        )
        with contextlib.suppress(Exception):
            conn.close()
        conn.connection = None
    return True


__all__ = [
    "after_job",
    "async_thread_needs_hygiene",
    "before_job",
    "clean_after",
    "clean_after_async",
    "clean_before",
    "clean_before_async",
    "discard_leaked_transaction",
    "in_flight",
    "thread_is_clean",
]
