"""The Prometheus collector: reads every queue's Redis at scrape time and yields the metric
families (docs/observability.md). Django-free: it takes a callable giving the queues.

Names follow the field's recommendation (BullMQ's ``bullmq_job_count``, Sidekiq's latency,
celery-exporter's task histograms): ``bullq_jobs{queue,state}``,
``bullq_jobs_{completed,failed,retried}_total{queue,task}``, ``bullq_jobs_stalled_total{queue}``,
``bullq_job_duration_seconds`` and ``bullq_job_wait_seconds`` histograms ``{queue,task}``,
``bullq_queue_latency_seconds{queue}``, ``bullq_workers{queue}``, ``bullq_queue_paused{queue}``
and ``bullq_queue_up{queue}``. The counters and histograms are all-time totals (monotonic; the
:mod:`~django_bullq.core.metrics.totals` hash), not the 72 h per-minute store.

Cardinality is bounded: a queue gives at most 12 series of its own and, per ``task`` label,
3 counters and 2 x 22 histogram series; a queue keeps at most ``MAX_NAMES`` (100) job names
and the collector labels the first ``max_tasks`` of them (in the order they were first kept,
so the choice never changes), the rest summed under ``task="(other names)"``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from ..core.clients import CLIENT_ERRORS
from ..core.job import STATES
from ..core.metrics import store
from ..core.metrics.histogram import merge
from ..core.metrics.totals import NameTotals, Totals
from ..core.queue import Queue
from ..core.worker_clients import ClientLists
from .buckets import cumulative
from .snapshot import QueueSnapshot, read_snapshot

logger = logging.getLogger("django_bullq.prometheus")

#: Job names per queue that get a ``task`` label of their own, by default.
DEFAULT_MAX_TASKS = 20
#: The ``task`` label of the names past the cap.
OTHER_TASK = store.OTHER


def task_totals(totals: Totals, max_tasks: int) -> dict[str, NameTotals]:
    """``task`` label -> totals: the ``max_tasks`` first-kept names, the rest summed under
    :data:`OTHER_TASK` (present only when something was summed)."""
    labelled: dict[str, NameTotals] = {}
    other = NameTotals()
    folded = False
    for name, t in totals.names.items():
        if 0 < t.rank <= max_tasks and name != OTHER_TASK:
            labelled[name] = t
            continue
        folded = True
        other.completed += t.completed
        other.failed += t.failed
        other.retried += t.retried
        other.run_sum_ms += t.run_sum_ms
        other.wait_sum_ms += t.wait_sum_ms
        merge(other.run, t.run)
        merge(other.wait, t.wait)
    if folded:
        labelled[OTHER_TASK] = other
    return labelled


class _Families:
    """The families of one scrape, filled queue by queue."""

    def __init__(self) -> None:
        q, qt = ["queue"], ["queue", "task"]
        self.jobs = GaugeMetricFamily(
            "bullq_jobs", "Jobs by queue and state.", labels=[*q, "state"]
        )
        self.completed = CounterMetricFamily(
            "bullq_jobs_completed", "Jobs completed, all time.", labels=qt
        )
        self.failed = CounterMetricFamily(
            "bullq_jobs_failed", "Jobs failed for good (no attempt left), all time.", labels=qt
        )
        self.retried = CounterMetricFamily(
            "bullq_jobs_retried", "Attempts that failed and were retried, all time.", labels=qt
        )
        self.stalled = CounterMetricFamily(
            "bullq_jobs_stalled", "Jobs the stalled check moved back to wait, all time.", labels=q
        )
        self.duration = HistogramMetricFamily(
            "bullq_job_duration_seconds", "Run time of every counted attempt.", labels=qt
        )
        self.wait = HistogramMetricFamily(
            "bullq_job_wait_seconds",
            "Wait from when a job could run (timestamp + delay) to its first attempt.",
            labels=qt,
        )
        self.latency = GaugeMetricFamily(
            "bullq_queue_latency_seconds", "Age of the oldest job ready to run (0: none).", labels=q
        )
        self.workers = GaugeMetricFamily("bullq_workers", "Workers connected.", labels=q)
        self.paused = GaugeMetricFamily("bullq_queue_paused", "1 when paused.", labels=q)
        self.up = GaugeMetricFamily("bullq_queue_up", "1 when Redis answered.", labels=q)

    def add(self, snap: QueueSnapshot, max_tasks: int) -> None:
        q = snap.name
        for state in STATES:
            self.jobs.add_metric([q, state], snap.counts.get(state, 0))
        self.latency.add_metric([q], snap.latency_s)
        self.workers.add_metric([q], snap.workers)
        self.paused.add_metric([q], int(snap.paused))
        self.stalled.add_metric([q], snap.totals.stalled)
        for task, t in sorted(task_totals(snap.totals, max_tasks).items()):
            labels = [q, task]
            self.completed.add_metric(labels, t.completed)
            self.failed.add_metric(labels, t.failed)
            self.retried.add_metric(labels, t.retried)
            self.duration.add_metric(labels, cumulative(t.run), t.run_sum_ms / 1000)
            self.wait.add_metric(labels, cumulative(t.wait), t.wait_sum_ms / 1000)

    def all(self) -> list[Metric]:
        return [
            self.jobs,
            self.latency,
            self.workers,
            self.paused,
            self.up,
            self.completed,
            self.failed,
            self.retried,
            self.stalled,
            self.duration,
            self.wait,
        ]


class BullqCollector(Collector):
    """A ``prometheus_client`` collector over django_bullq queues, read at each scrape.

    Args:
        queues: called at each scrape; the :class:`~django_bullq.core.queue.queue.Queue` objects to
            read (a queue whose Redis fails is reported with ``bullq_queue_up 0``).
        max_tasks: job names per queue with a ``task`` label of their own (the rest:
            ``"(other names)"``); at most ``MAX_NAMES`` (100) are kept anyway.

    Register it: ``prometheus_client.REGISTRY.register(BullqCollector(lambda: [queue]))``.
    """

    def __init__(
        self, queues: Callable[[], Iterable[Queue]], *, max_tasks: int = DEFAULT_MAX_TASKS
    ) -> None:
        self._queues = queues
        self.max_tasks = max_tasks

    def describe(self) -> Iterator[Metric]:
        """The families without samples: what a registry checks names against at
        ``register`` (so registering reads no Redis, even in an auto-describing registry)."""
        yield from _Families().all()

    def collect(self) -> Iterator[Metric]:
        """The families of one scrape (reads Redis: two round trips per queue)."""
        families = _Families()
        clients = ClientLists()
        now_ms = int(time.time() * 1000)
        for queue in self._queues():
            try:
                snap = read_snapshot(queue, clients, now_ms)
            except CLIENT_ERRORS as exc:
                logger.warning("prometheus: cannot read queue %s: %s", queue.name, exc)
                families.up.add_metric([queue.name], 0)
                continue
            families.up.add_metric([queue.name], 1)
            families.add(snap, self.max_tasks)
        yield from families.all()
