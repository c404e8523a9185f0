"""Database hygiene around each job, run in the thread that runs the job (cases B29 and B30).

* before a job: ``reset_queries()`` and ``close_old_connections()`` (honours ``CONN_MAX_AGE``
  and ``CONN_HEALTH_CHECKS``, drops connections that errored and are unusable);
* after a job: any transaction the job left open (an unexited ``atomic`` block, autocommit
  turned off, a pending rollback) is rolled back, then the same two calls.

:func:`in_flight` counts the sync jobs between the two hooks, for ``runworker``'s shutdown.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Sequence
from typing import Any

from django.db import close_old_connections, connections, reset_queries

from ..core.job import Job

logger = logging.getLogger("django_bullq.worker")

_in_flight: set[tuple[str, str, int]] = set()
_in_flight_lock = threading.Lock()


def before_job(job: Job) -> None:
    """Run before each job in its thread: fresh query log, no stale DB connections."""
    with _in_flight_lock:
        _in_flight.add(_job_key(job))
    reset_queries()
    close_old_connections()


def after_job(job: Job) -> None:
    """Run after each job in its thread: undo a leaked transaction, then clean up as before."""
    try:
        for conn in connections.all(initialized_only=True):
            discard_leaked_transaction(conn, job)
        reset_queries()
        close_old_connections()
    finally:
        with _in_flight_lock:
            _in_flight.discard(_job_key(job))


def _job_key(job: Job) -> tuple[str, str, int]:
    queue = job.queue.name if job.queue is not None else ""
    return queue, job.id, threading.get_ident()


def in_flight(queue_names: Sequence[str] | None = None) -> int:
    """Sync jobs whose function is still running in a thread (e.g. after the grace period),
    of the queues ``queue_names`` (default: of every queue in this process)."""
    with _in_flight_lock:
        if queue_names is None:
            return len(_in_flight)
        names = set(queue_names)
        return sum(1 for queue, _, _ in _in_flight if queue in names)


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


__all__ = ["after_job", "before_job", "discard_leaked_transaction", "in_flight"]
