"""Worker settings (:class:`WorkerOptions`, BullMQ's names), the processor's types and the
worker's fixed limits."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from ..deprecation import renamed_fields
from ..job import Job
from ..serialization import DEFAULT_MAX_PAYLOAD_BYTES

Processor = Callable[[Job], Any]
#: Called in the thread that runs a sync job, before and after it (the worker group: its
#: recycler's job count).
JobHook = Callable[[Job], None]

#: What a :class:`Dispatcher` returns for one job: a zero-argument callable, run in the
#: worker's thread pool, or an awaitable (a coroutine), awaited on the worker's loop.
Route = Callable[[], Any] | Awaitable[Any]


@dataclass(frozen=True, slots=True)
class Dispatcher:
    """A processor that decides, for each job, whether it runs in a thread or on the loop.

    ``route(job)`` runs on the worker's event loop, so it must be quick and must not block.
    It returns either a zero-argument callable, which the worker calls in its thread pool with
    the hooks around it in that thread, or an awaitable, which the worker awaits on the loop
    (no thread hop) with the hooks run on the loop's thread. An exception from ``route``
    fails the attempt like one from the job. ``Worker(queue, Dispatcher(route))``.

    Called as a plain processor (``dispatcher(job)``), it runs the route's callable in the
    calling thread, or returns the awaitable.

    Attributes:
        route: ``route(job) -> callable | awaitable`` (see above).
    """

    route: Callable[[Job], Route]

    def __call__(self, job: Job) -> Any:
        run = self.route(job)
        return run if inspect.isawaitable(run) else run()


MAX_BLOCK_S = 10.0
MAX_RATE_LIMIT_WAIT_S = 30.0
#: Consecutive fetch errors after which a burst run gives up (~3 s of backoff).
BURST_MAX_FAILURES = 5
#: s a fetch call may take before it is abandoned (a cut network that never answers).
FETCH_TIMEOUT_S = 20.0
#: s after which a failed periodic duty (heartbeat, lock renewal, stalled check) runs again.
DUTY_RETRY_S = 1.0
#: s of slack over a loop step's own wait before the fetch loop counts as stuck (no heartbeat).
LOOP_SLACK_S = 10.0


@renamed_fields(grace_period="grace_period_s", maintenance_interval="maintenance_interval_ms")
@dataclass(frozen=True, slots=True, kw_only=True)
class WorkerOptions:
    """Worker settings (BullMQ ``WorkerOptions`` names in brackets). Durations in ms unless noted.

    A field that BullMQ has keeps BullMQ's name (its unit given here); one of ours names its
    unit. The old names ``grace_period`` and ``maintenance_interval`` are still accepted, and
    readable, with a DeprecationWarning.

    Attributes:
        concurrency: jobs run at once [concurrency].
        lock_duration: lock TTL, ms [lockDuration]; renewed every half of it.
        stalled_interval: ms between stalled checks [stalledInterval].
        max_stalled_count: stalls allowed before a job fails [maxStalledCount].
        drain_delay: s to block on the marker when the queue is empty [drainDelay].
        limiter_max / limiter_duration: rate limit, jobs per window of ms [limiter.max/duration].
        name: worker name, written as ``pb`` and in the client name [name].
        remove_on_complete / remove_on_fail: defaults when a job's opts have none.
        max_data_bytes: jobs whose ``data`` is larger (bytes of JSON) fail without running,
            with a readable reason (jobs added by other producers); 0 = no limit.
        grace_period_s: s that active jobs get to finish after a stop signal.
        maintenance_interval_ms: ms between retention sweeps of completed/failed (0 = off).
        metrics_max_data_points: per-minute completed/failed counts kept in BullMQ's metrics
            keys, 0 = off [metrics.maxDataPoints]; read them with ``Queue.get_metrics``.
        record_metrics: record django_bullq's own metrics (counts and run / wait duration
            histograms per job name and minute, kept 72 h; docs/metrics.md): a few dict
            operations per job, one pipelined write every 5 s. On by default.
        skip_lock_renewal: never renew locks [skipLockRenewal]; a job running longer than
            lock_duration is then recovered by the stalled check (case B23).
        listen_control: subscribe to ``<prefix>:<queue>:control`` so that
            ``Queue.cancel_job`` from any process cancels jobs running here.
        event_loop: the loop :meth:`Worker.run` creates: ``"auto"`` (uvloop when installed),
            ``"uvloop"`` or ``"asyncio"`` (see :mod:`django_bullq.core.eventloop`).
    """

    concurrency: int = 1
    lock_duration: int = 30_000
    stalled_interval: int = 30_000
    max_stalled_count: int = 1
    drain_delay: float = 5.0
    limiter_max: int = 0
    limiter_duration: int = 0
    name: str = ""
    remove_on_complete: Any = None
    remove_on_fail: Any = None
    max_data_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES
    grace_period_s: float = 30.0
    maintenance_interval_ms: int = 30_000
    metrics_max_data_points: int = 0
    record_metrics: bool = True
    event_loop: str = "auto"
    skip_lock_renewal: bool = False
    listen_control: bool = True
