"""Several queues on one event loop: the worker group ``manage.py runworker`` runs.

``manage.py runworker`` is a thin shell over :func:`run_workers`. Each core worker gets the
dispatcher (:data:`~django_bullq.worker.dispatch.dispatcher`) as its processor, which runs
the database hygiene of :mod:`django_bullq.worker.hygiene` around each job. With
``BULLQ["OUTBOX"]["ENABLED"]`` the group also relays the transactional outbox to Redis
(:mod:`django_bullq.producer.outbox`); with ``BULLQ["JOB_INDEX"]["ENABLED"]`` it records its
queues' finished jobs in the job index (:mod:`django_bullq.recorder`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from typing import Any

from .. import telemetry
from ..conf import bullq_settings, get_queue, worker_options
from ..core import eventloop
from ..core.worker import Worker
from ..core.worker.outage import is_outage
from ..core.worker.shutdown import SignalStop
from .dispatch import dispatcher
from .recycle import Recycler

logger = logging.getLogger("django_bullq.worker")


def build_worker(queue_name: str, **overrides: Any) -> Worker:
    """A core :class:`Worker` for ``queue_name`` with the task dispatcher (DB hygiene included).

    Args:
        queue_name: queue name (resolved through ``BULLQ``).
        overrides: :class:`~django_bullq.core.worker.WorkerOptions` fields over
            ``BULLQ["WORKER"]`` (``concurrency``, ``grace_period_s``, ``name``...).

    Raises:
        ConfigurationError: bad settings. InvalidNameError: bad queue name.
    """
    queue = get_queue(queue_name)
    telemetry.observe_queue(queue)  # BULLQ["TELEMETRY"]: its job counts as a gauge
    return Worker(queue, dispatcher, worker_options(**overrides))


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
        self.recorders: list[Any] = []  # the job index's recorders while they run

    def close(self, *, force: bool = False) -> None:
        """Close every worker (``force``: hand active jobs back at once)."""
        self.forced = self.forced or force
        for worker in self.workers:
            worker.close(force=force)

    async def arun(self, *, burst: bool = False, handle_signals: bool = True) -> None:
        """Run all workers until closed (``burst``: until every queue is idle)."""
        loop = asyncio.get_running_loop()
        installed: list[int] = []
        if handle_signals:
            grace = max((w.opts.grace_period_s for w in self.workers), default=0)
            installed = SignalStop(self.close, grace).install(loop)
        try:
            results = await asyncio.gather(
                *(self._run_one(w, burst=burst) for w in self.workers), return_exceptions=True
            )
        finally:
            for sig in installed:
                loop.remove_signal_handler(sig)
        errors = [r for r in results if isinstance(r, BaseException)]
        if errors:
            raise errors[0]

    async def _run_one(self, worker: Worker, *, burst: bool) -> None:
        try:
            await worker.arun(burst=burst)
        except BaseException as exc:
            # One worker crashed: stop the others gracefully instead of running half a group.
            # A --burst run that gave up on an unreachable Redis is no crash: runworker says
            # so in one line.
            if not (burst and isinstance(exc, Exception) and is_outage(exc)):
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
    relay = await _start_outbox_relay(burst=burst)
    recording = _start_recorder(group)
    try:
        await group.arun(burst=burst, handle_signals=handle_signals)
    finally:
        for duty in (relay, recording):
            if duty is not None:
                duty.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await duty
        await _record_last(group)


def _start_recorder(group: WorkerGroup) -> asyncio.Task[None] | None:
    """With ``BULLQ["JOB_INDEX"]["ENABLED"]``: a recorder pass every ``POLL_INTERVAL`` s, in
    a thread, while the workers run."""
    settings = bullq_settings.JOB_INDEX
    if not settings["ENABLED"]:
        return None
    from ..recorder import Recorder, arecord_forever

    group.recorders = [Recorder(w.queue) for w in group.workers]
    return asyncio.create_task(arecord_forever(group.recorders, float(settings["POLL_INTERVAL"])))


async def _record_last(group: WorkerGroup) -> None:
    """One last recorder pass once the workers stopped (a burst run records its jobs)."""
    if group.recorders:
        from ..recorder import record_all

        await asyncio.to_thread(record_all, group.recorders)


async def _start_outbox_relay(*, burst: bool) -> asyncio.Task[None] | None:
    """With ``BULLQ["OUTBOX"]["ENABLED"]``: relay the whole backlog now (so a burst run sees
    every row), then, unless ``burst``, again every ``POLL_INTERVAL`` s while the workers run."""
    settings = bullq_settings.OUTBOX
    if not settings["ENABLED"]:
        return None
    from ..producer.relay import arelay_forever, relay_backlog

    await asyncio.to_thread(relay_backlog)
    if burst:
        return None
    return asyncio.create_task(arelay_forever(float(settings["POLL_INTERVAL"])))
