"""Django-aware workers: per-job database hygiene hooks and several queues on one event loop.

``manage.py runworker`` is a thin shell over :func:`run_workers`. The hooks run in the thread
that runs each job (cases B29 and B30):

* before a job: ``reset_queries()`` and ``close_old_connections()`` (honours ``CONN_MAX_AGE``
  and ``CONN_HEALTH_CHECKS``, drops connections that errored and are unusable);
* after a job: any transaction the job left open (an unexited ``atomic`` block, autocommit
  turned off, a pending rollback) is rolled back, then the same two calls.

With ``BULLQ["OUTBOX"]["ENABLED"]`` the group also relays the transactional outbox to Redis
(:mod:`django_bullq.producer.outbox`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import threading
from collections.abc import Sequence
from typing import Any

from django.db import close_old_connections, connections, reset_queries

from ..conf import bullq_settings, get_queue, worker_options
from ..core import eventloop
from ..core.job import Job
from ..core.worker import Worker
from ..producer.task import process_job
from .recycle import Recycler

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
    except Exception:  # noqa: BLE001 - an unusable connection is dropped, not reused
        logger.warning(
            "database %r: rollback failed, closing the connection", conn.alias, exc_info=True
        )
        with contextlib.suppress(Exception):
            conn.close()
        conn.connection = None
    return True


def build_worker(queue_name: str, **overrides: Any) -> Worker:
    """A core :class:`Worker` for ``queue_name`` with the task dispatcher and the DB hooks.

    Args:
        queue_name: queue name (resolved through ``BULLQ``).
        overrides: :class:`~django_bullq.core.worker.WorkerOptions` fields over
            ``BULLQ["WORKER"]`` (``concurrency``, ``grace_period`` s, ``name``...).

    Raises:
        ConfigurationError: bad settings. InvalidNameError: bad queue name.
    """
    return Worker(
        get_queue(queue_name),
        process_job,
        worker_options(**overrides),
        hooks=[(before_job, after_job)],
    )


class WorkerGroup:
    """Several workers (one per queue) run together on one event loop.

    The first SIGTERM/SIGINT closes every worker gracefully (stop fetching, finish active jobs
    within the grace period, hand the rest back to wait); a second one stops them at once.

    Attributes:
        workers: the core workers. forced: True when a second signal stopped them.
    """

    def __init__(self, workers: Sequence[Worker]) -> None:
        self.workers = list(workers)
        self.forced = False
        self._signalled = False

    def close(self, force: bool = False) -> None:
        """Close every worker (``force``: hand active jobs back at once)."""
        self.forced = self.forced or force
        for worker in self.workers:
            worker.close(force=force)

    def _on_signal(self, signum: int) -> None:
        name = signal.Signals(signum).name
        if self._signalled:
            logger.warning("%s again: stopping now; active jobs go back to wait", name)
            self.close(force=True)
            return
        self._signalled = True
        grace = max((w.opts.grace_period for w in self.workers), default=0)
        logger.info("%s: no new jobs; active ones get %.1f s to finish", name, grace)
        self.close()

    async def arun(self, burst: bool = False, handle_signals: bool = True) -> None:
        """Run all workers until closed (``burst``: until every queue is idle)."""
        loop = asyncio.get_running_loop()
        installed: list[signal.Signals] = []
        if handle_signals:
            for sig in (signal.SIGTERM, signal.SIGINT):
                with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                    loop.add_signal_handler(sig, self._on_signal, sig)
                    installed.append(sig)
        try:
            results = await asyncio.gather(
                *(self._run_one(w, burst) for w in self.workers), return_exceptions=True
            )
        finally:
            for sig in installed:
                loop.remove_signal_handler(sig)
        errors = [r for r in results if isinstance(r, BaseException)]
        if errors:
            raise errors[0]

    async def _run_one(self, worker: Worker, burst: bool) -> None:
        try:
            await worker.arun(burst=burst)
        except BaseException:
            # One worker crashed: stop the others gracefully instead of running half a group.
            logger.exception("worker %s crashed; stopping the other workers", worker.queue.name)
            self.close()
            raise


def run_workers(
    queue_names: Sequence[str],
    *,
    burst: bool = False,
    handle_signals: bool = True,
    recycler: Recycler | None = None,
    **overrides: Any,
) -> WorkerGroup:
    """Build one worker per queue and run them on a new event loop until they stop.

    Args:
        queue_names: queue names (at least one).
        burst: return once every queue holds no runnable job.
        handle_signals: install the SIGTERM/SIGINT handlers (main thread only).
        recycler: a :class:`~django_bullq.worker.recycle.Recycler` that closes the group gracefully
            at ``--max-jobs`` / ``--max-memory`` (its ``reason`` then says why).
        overrides: WorkerOptions fields for every worker.

    Returns:
        The finished :class:`WorkerGroup` (``forced`` tells whether a second signal came).
    """
    group = WorkerGroup([build_worker(name, **overrides) for name in queue_names])
    eventloop.run(
        arun_group(group, burst=burst, handle_signals=handle_signals, recycler=recycler),
        group.workers[0].opts.event_loop,
    )
    return group


async def arun_group(
    group: WorkerGroup,
    *,
    burst: bool = False,
    handle_signals: bool = True,
    recycler: Recycler | None = None,
) -> None:
    """Run ``group`` on the running loop with the recycler and the outbox relay (see
    :func:`run_workers` for the arguments)."""
    if recycler is not None and recycler.enabled:
        for worker in group.workers:
            worker.hooks.append((recycler.before_job, recycler.after_job))
    if recycler is not None:
        recycler.bind(asyncio.get_running_loop(), group.close)
    relay = await _start_outbox_relay(burst)
    try:
        await group.arun(burst=burst, handle_signals=handle_signals)
    finally:
        if relay is not None:
            relay.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await relay


async def _start_outbox_relay(burst: bool) -> asyncio.Task[None] | None:
    """With ``BULLQ["OUTBOX"]["ENABLED"]``: one relay pass now (so a burst run sees the rows),
    then, unless ``burst``, a pass every ``POLL_INTERVAL`` s while the workers run."""
    settings = bullq_settings.OUTBOX
    if not settings["ENABLED"]:
        return None
    from ..producer.outbox import arelay_forever, relay_all

    await asyncio.to_thread(relay_all)
    if burst:
        return None
    return asyncio.create_task(arelay_forever(float(settings["POLL_INTERVAL"])))


def run_processes(count: int, worker_args: Sequence[str], name: str | None = None) -> int:
    """Run and supervise ``count`` copies of ``runworker <worker_args>`` as child processes.

    Each child is a full worker process (its own event loop, thread pool and Redis connections;
    the Lua core makes them safe to run side by side). SIGTERM/SIGINT are forwarded to every
    child, so the first signal is graceful in all of them and a second one stops them at once.
    A child that dies is replaced, one that recycles itself (``--max-jobs``, ``--max-memory``)
    too; see :class:`~django_bullq.worker.supervisor.Supervisor`.

    Args:
        count: number of processes (>= 1).
        worker_args: command-line arguments for each child's ``runworker`` (without
            ``--processes`` and ``--name``).
        name: worker name; child i (1-based) is named ``<name>-<i>`` so that dashboards and
            ``processedBy`` tell the processes apart (a replacement keeps the name).

    Returns:
        The highest final exit code of the children (0 when all stopped cleanly; at least 1
        when the supervisor gave up on a crash loop).
    """
    import os
    import sys

    from django.conf import settings

    from .supervisor import Supervisor

    env = dict(os.environ)
    env["DJANGO_SETTINGS_MODULE"] = settings.SETTINGS_MODULE
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p and os.path.isdir(p))
    env["BULLQ_SUPERVISED"] = "1"
    command = [sys.executable, "-m", "django", "runworker", *worker_args]

    def child(slot: int) -> list[str]:
        return [*command, *(["--name", f"{name}-{slot}"] if name else [])]

    supervisor = Supervisor(count, child, env)
    logger.info("runworker: supervising %d worker processes", count)
    return supervisor.run()
