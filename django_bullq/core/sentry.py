"""Sentry for queues and workers: the integration that Sentry's Queues module and Crons read.

Turn it on where Sentry is set up (docs/observability.md, "Sentry")::

    import sentry_sdk
    from django_bullq.core.sentry import BullQIntegration

    sentry_sdk.init(dsn=..., traces_sample_rate=0.1, integrations=[BullQIntegration()])

Then, in every process that adds or runs jobs:

* an add opens a ``queue.publish`` span in the caller's transaction (a Django view's, say), with
  ``messaging.message.id``, ``messaging.destination.name`` (the queue) and
  ``messaging.message.body.size``, and stores the trace's ``sentry-trace`` and ``baggage``
  headers in the job's options under :data:`CARRIER` (a key of its own: BullMQ clients ignore
  it, and ``tm`` stays OpenTelemetry's);
* each attempt runs in a ``queue.process`` transaction named after the job, continuing the
  producer's trace, with the message id, destination, body size, receive latency (ms from when
  the job could run to its start) and retry count (attempts made before it);
* only a job's final failure is an error event; an attempt that fails while attempts remain
  is a breadcrumb on its transaction, and the final failure's event carries one breadcrumb
  per earlier failed attempt (read from the job's stored ``stacktrace``, so the attempts may
  have run in other processes);
* an iteration of a job scheduler checks in to a Crons monitor named after the scheduler
  (``in_progress`` at its start, ``ok`` or ``error`` at its end), the monitor's schedule and
  time zone taken from the scheduler's pattern or interval.

The hooks are :mod:`~django_bullq.core.instrument`'s; while Sentry is not initialised with
this integration they return at once.
"""

from __future__ import annotations

import re
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, cast

import sentry_sdk
from sentry_sdk.consts import OP, SPANDATA
from sentry_sdk.crons import MonitorStatus, capture_checkin
from sentry_sdk.integrations import Integration
from sentry_sdk.tracing import Span, TransactionSource

from . import instrument
from .job import Job
from .serialization import dumps

if TYPE_CHECKING:
    from sentry_sdk._types import MonitorConfig

#: The job option that carries the producer's Sentry trace headers
#: (``{"sentry-trace": ..., "baggage": ...}``).
CARRIER: Final = "sentryTrace"
#: ``messaging.system`` of every span: the protocol the queue speaks.
SYSTEM: Final = "bullmq"
#: Span statuses by attempt outcome (Sentry's span status names).
_STATUS: Final = {
    instrument.COMPLETED: "ok",
    instrument.WAITING_CHILDREN: "ok",
    instrument.FAILED: "internal_error",
    instrument.RETRY: "internal_error",
    instrument.DELAY: "internal_error",
    instrument.RATE_LIMITED: "resource_exhausted",
    instrument.LOST: "unknown",
}
_SLUG_JUNK = re.compile(r"[^a-z0-9_-]+")
#: Crons interval units, largest first, in ms.
_UNITS_MS: Final = (("day", 86_400_000), ("hour", 3_600_000), ("minute", 60_000))


class BullQIntegration(Integration):
    """The django_bullq integration for ``sentry_sdk.init(integrations=[...])``.

    Args:
        monitor_job_schedulers: check in each job scheduler's iterations as a Crons monitor
            (default True).
    """

    identifier = "django_bullq"
    origin = f"auto.queue.{identifier}"

    def __init__(self, *, monitor_job_schedulers: bool = True) -> None:
        self.monitor_job_schedulers = monitor_job_schedulers

    @staticmethod
    def setup_once() -> None:
        """Register the hooks for every queue and worker of the process."""
        instrument.register(INSTRUMENTATION)


def _integration() -> BullQIntegration | None:
    found: BullQIntegration | None = sentry_sdk.get_client().get_integration(BullQIntegration)
    return found


@dataclass(slots=True)
class _Publish:
    span: Span
    headers: dict[str, str]


@dataclass(slots=True)
class _Process:
    """One attempt's Sentry state: its entered transaction and isolation scope (exited in
    that order at the attempt's end) and its Crons check-in."""

    transaction: Any
    scope: Any
    monitor: tuple[str, str, float] | None = None  # (slug, check-in id, start monotonic s)


class _SentryHooks(instrument.Instrumentation):
    """The hooks behind :class:`BullQIntegration` (one for the process: :data:`INSTRUMENTATION`)."""

    def add_started(self, operation: str, queue_name: str, count: int) -> _Publish | None:
        if _integration() is None:
            return None
        span = sentry_sdk.start_span(
            op=OP.QUEUE_PUBLISH, name=queue_name, origin=BullQIntegration.origin
        )
        span.set_data(SPANDATA.MESSAGING_DESTINATION_NAME, queue_name)
        span.set_data(SPANDATA.MESSAGING_SYSTEM, SYSTEM)
        if operation != instrument.ADD:
            span.set_data("messaging.batch.message_count", count)
        return _Publish(span, dict(span.iter_headers()))

    def job_adding(self, state: Any, queue_name: str, name: str, opts: dict[str, Any]) -> None:
        if isinstance(state, _Publish):
            opts[CARRIER] = state.headers

    def add_ended(self, state: Any, jobs: Sequence[Job], error: BaseException | None) -> None:
        if not isinstance(state, _Publish):
            return
        span = state.span
        if len(jobs) == 1:
            span.set_data(SPANDATA.MESSAGING_MESSAGE_ID, jobs[0].id)
            span.set_data("messaging.message.body.size", _body_size(jobs[0].data))
        span.set_status("internal_error" if error is not None else "ok")
        span.finish()

    def attempt_started(self, worker: Any, job: Job) -> _Process | None:
        integration = _integration()
        if integration is None:
            return None
        scope_cm = sentry_sdk.isolation_scope()
        scope = scope_cm.__enter__()
        scope.clear_breadcrumbs()
        queue_name = _queue_name(worker)
        scope.set_tag("bullmq.queue", queue_name)
        scope.set_tag("bullmq.job.name", job.name)
        scope.set_context("bullmq job", _job_context(job))
        carrier = job.opts.get(CARRIER)
        transaction = sentry_sdk.continue_trace(
            carrier if isinstance(carrier, dict) else {},
            op=OP.QUEUE_PROCESS,
            name=job.name,
            source=TransactionSource.TASK,
            origin=BullQIntegration.origin,
        )
        for key, value in _process_data(job, queue_name).items():
            transaction.set_data(key, value)
        entered = sentry_sdk.start_transaction(transaction)
        entered.__enter__()
        run = _Process(entered, scope_cm)
        if integration.monitor_job_schedulers:
            run.monitor = _check_in_start(job)
        return run

    def attempt_ended(
        self, state: Any, worker: Any, job: Job, outcome: str, error: BaseException | None
    ) -> None:
        if not isinstance(state, _Process):
            return
        try:
            _report(state, job, outcome, error)
        finally:
            state.transaction.__exit__(None, None, None)
            state.scope.__exit__(None, None, None)


def _report(run: _Process, job: Job, outcome: str, error: BaseException | None) -> None:
    """Status, breadcrumb or error event, and the check-in of one attempt's end."""
    run.transaction.set_status(_STATUS.get(outcome, "unknown"))
    if outcome in (instrument.RETRY, instrument.DELAY, instrument.FAILED):
        run.transaction.set_data("bullmq.job.failed_reason", _last_line(error))
    if outcome in (instrument.RETRY, instrument.DELAY):
        # not an error: a breadcrumb for whatever the attempt's scope still reports
        sentry_sdk.add_breadcrumb(_attempt_crumb(job, job.attempts_made + 1, _last_line(error)))
    elif outcome == instrument.FAILED:
        earlier = job.stacktrace  # one trace per failed attempt before this one, oldest first
        first = job.attempts_made + 1 - len(earlier)
        for number, trace in enumerate(earlier, start=first):
            sentry_sdk.add_breadcrumb(_attempt_crumb(job, number, _trace_line(trace)))
        if error is not None:
            sentry_sdk.capture_exception(error)
        else:  # refused without running (a corrupt hash, a payload over the limit)
            sentry_sdk.capture_message(f"job {job.id} ({job.name}) failed", level="error")
    if run.monitor is not None and outcome not in (instrument.RETRY, instrument.DELAY):
        slug, check_in_id, started = run.monitor
        capture_checkin(
            monitor_slug=slug,
            check_in_id=check_in_id,
            status=MonitorStatus.OK if _STATUS.get(outcome) == "ok" else MonitorStatus.ERROR,
            duration=time.monotonic() - started,
        )


def _attempt_crumb(job: Job, number: int, reason: str) -> dict[str, Any]:
    """The breadcrumb of failed attempt ``number`` (1 = the first) of ``job``."""
    return {
        "category": "bullmq",
        "level": "warning",
        "message": f"attempt {number} of {job.attempts} of job {job.id} failed: {reason}",
        "data": {"job_id": job.id, "job_name": job.name, "attempt": number},
    }


def _last_line(error: BaseException | None) -> str:
    """``"ValueError: card declined"``: the error as a traceback's last line ends."""
    if error is None:
        return "refused"
    return traceback.format_exception_only(error)[-1].strip()


def _trace_line(trace: str) -> str:
    """The last non-empty line of a stored stack trace (its error line)."""
    lines = [line.strip() for line in str(trace).splitlines() if line.strip()]
    return lines[-1] if lines else "unknown error"


def _queue_name(worker: Any) -> str:
    queue = getattr(worker, "queue", None)
    return str(getattr(queue, "name", ""))


def _job_context(job: Job) -> dict[str, Any]:
    return {
        "id": job.id,
        "name": job.name,
        "attempt": job.attempts_made + 1,
        "attempts": job.attempts,
        "scheduler": job.repeat_job_key,
    }


def _process_data(job: Job, queue_name: str) -> dict[str, Any]:
    """The ``queue.process`` transaction's data (Sentry's Queues module keys)."""
    start = job.processed_on or int(time.time() * 1000)
    return {
        SPANDATA.MESSAGING_MESSAGE_ID: job.id,
        SPANDATA.MESSAGING_DESTINATION_NAME: queue_name,
        SPANDATA.MESSAGING_SYSTEM: SYSTEM,
        "messaging.message.body.size": len(job.raw.get("data", "").encode("utf-8")),
        SPANDATA.MESSAGING_MESSAGE_RECEIVE_LATENCY: max(
            0, start - job.timestamp - (job.delay or 0)
        ),
        SPANDATA.MESSAGING_MESSAGE_RETRY_COUNT: job.attempts_made,
    }


def _body_size(data: Any) -> int:
    try:
        return len(dumps(data).encode("utf-8"))
    except Exception:  # noqa: BLE001 - a size is a nicety; the add itself succeeded
        return 0


def _check_in_start(job: Job) -> tuple[str, str, float] | None:
    """``in_progress`` for an iteration of a job scheduler; (slug, check-in id, start)."""
    if not job.repeat_job_key:
        return None
    slug = monitor_slug(job.repeat_job_key)
    check_in_id = capture_checkin(
        monitor_slug=slug,
        status=MonitorStatus.IN_PROGRESS,
        monitor_config=cast("MonitorConfig | None", monitor_config(job.opts.get("repeat"))),
    )
    if check_in_id is None:
        return None
    return slug, check_in_id, time.monotonic()


def monitor_slug(scheduler_id: str) -> str:
    """The Crons monitor slug of job scheduler ``scheduler_id``: lower case, runs of other
    characters than letters, digits, ``-`` and ``_`` as one ``-``, at most 50 characters."""
    return _SLUG_JUNK.sub("-", scheduler_id.lower()).strip("-")[:50] or "job-scheduler"


def monitor_config(repeat: Any) -> dict[str, Any] | None:
    """A Crons ``monitor_config`` from an iteration's ``opts.repeat``: a crontab schedule for a
    ``pattern`` (with its ``tz``), an interval for ``every`` (ms, in the largest whole unit of
    day / hour / minute, at least 1 minute); None when it has neither."""
    if not isinstance(repeat, dict):
        return None
    config: dict[str, Any]
    if isinstance(repeat.get("pattern"), str):
        config = {"schedule": {"type": "crontab", "value": repeat["pattern"]}}
    elif isinstance(repeat.get("every"), int) and repeat["every"] > 0:
        every_ms = repeat["every"]
        unit, size = next(((u, s) for u, s in _UNITS_MS if every_ms % s == 0), _UNITS_MS[-1])
        config = {"schedule": {"type": "interval", "value": max(1, every_ms // size), "unit": unit}}
    else:
        return None
    if isinstance(repeat.get("tz"), str):
        config["timezone"] = repeat["tz"]
    return config


#: The process's one instance of the hooks (registered by :meth:`BullQIntegration.setup_once`).
INSTRUMENTATION: Final = _SentryHooks()

__all__ = ["CARRIER", "INSTRUMENTATION", "BullQIntegration", "monitor_config"]
