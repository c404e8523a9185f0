"""OpenTelemetry metrics: BullMQ's (``bullmq-otel`` with ``enableMetrics``: the
``bullmq.jobs.*`` counters, the ``bullmq.job.duration`` histogram in ms and the
``bullmq.queue.jobs`` gauge by state) and the messaging semantic conventions'
``messaging.process.duration`` (s).

Attributes as BullMQ's: ``bullmq.queue.name``, ``bullmq.job.name``, ``bullmq.job.state``;
``messaging.process.duration`` carries ``messaging.system``, ``messaging.destination.name``,
``messaging.operation.name`` and, for an attempt that raised, ``error.type``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from opentelemetry import metrics
from opentelemetry.metrics import CallbackOptions, Observation

from .. import instrument
from ..job import Job
from ..options import now_ms
from . import attributes as a

#: An attempt outcome -> (BullMQ's job state, its counter); outcomes that BullMQ does not
#: count are absent.
_COUNTED = {
    instrument.COMPLETED: ("completed", a.JOBS_COMPLETED),
    instrument.FAILED: ("failed", a.JOBS_FAILED),
    instrument.DELAY: ("delayed", a.JOBS_DELAYED),
    instrument.RETRY: ("retried", a.JOBS_RETRIED),
    instrument.RATE_LIMITED: ("waiting", a.JOBS_WAITING),
    instrument.WAITING_CHILDREN: ("waiting-children", a.JOBS_WAITING_CHILDREN),
}
#: ``messaging.process.duration`` buckets, s (the semantic conventions' advice).
_PROCESS_BUCKETS_S = (0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10)


class Meters:
    """The instruments, made once per provider.

    Args:
        meter_provider: an OpenTelemetry ``MeterProvider``; the global one by default.
    """

    def __init__(self, meter_provider: Any = None) -> None:
        meter = metrics.get_meter(a.SCOPE, meter_provider=meter_provider)
        self.meter = meter
        self.counters = {
            name: meter.create_counter(name, unit="1", description=f"Number of jobs {state}")
            for state, name in _COUNTED.values()
        }
        self.duration_ms = meter.create_histogram(
            a.JOB_DURATION, unit="ms", description="Job processing duration"
        )
        self.process_s = meter.create_histogram(
            a.PROCESS_DURATION,
            unit="s",
            description="Duration of processing operation",
            explicit_bucket_boundaries_advisory=list(_PROCESS_BUCKETS_S),
        )
        self._gauge_queues: list[Any] = []

    def attempt(
        self, queue_name: str, job: Job, outcome: str, ran_s: float, error: BaseException | None
    ) -> None:
        """Count an attempt's ``outcome`` and record its durations (``ran_s``: s it ran)."""
        counted = _COUNTED.get(outcome)
        if counted is not None:
            state, name = counted
            labels = {a.QUEUE_NAME: queue_name, a.JOB_NAME: job.name, a.JOB_STATE: state}
            self.counters[name].add(1, labels)
            if job.processed_on:  # BullMQ: from processedOn to now
                self.duration_ms.record(max(0, now_ms() - job.processed_on), labels)
        process = {
            a.MESSAGING_SYSTEM: a.SYSTEM,
            a.MESSAGING_DESTINATION: queue_name,
            a.MESSAGING_OPERATION_NAME: "process",
        }
        if error is not None:
            process[a.ERROR_TYPE] = type(error).__qualname__
        self.process_s.record(ran_s, process)

    def observe_queues(self, queues: Iterable[Any]) -> None:
        """Report ``bullmq.queue.jobs`` (gauge, by ``bullmq.queue.jobs.state``) for ``queues``
        at each collection: one ``get_job_counts`` read of each queue (BullMQ
        ``recordJobCountsMetric``). A queue that cannot be read is left out of that
        collection. Later calls add queues; a queue given again (same prefix and name) is
        read once."""
        first = not self._gauge_queues
        known = {(q.prefix, q.name) for q in self._gauge_queues}
        self._gauge_queues.extend(q for q in queues if (q.prefix, q.name) not in known)
        if first:
            self.meter.create_observable_gauge(
                a.QUEUE_JOBS,
                callbacks=[self._job_counts],
                unit="{jobs}",
                description="Number of jobs in the queue by state",
            )

    def _job_counts(self, options: CallbackOptions) -> Iterable[Observation]:
        found: list[Observation] = []
        for queue in self._gauge_queues:
            try:
                counts = queue.get_job_counts()
            except Exception:  # noqa: BLE001 - Redis away: no reading this time
                continue
            for state, count in counts.items():
                found.append(
                    Observation(int(count), {a.QUEUE_NAME: queue.name, a.QUEUE_JOBS_STATE: state})
                )
        return found
