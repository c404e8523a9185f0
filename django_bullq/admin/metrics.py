"""What the admin shows of the job metrics: the metrics page's charts and table, the queue
page's throughput and the overview's sparkline (docs/metrics.md).

Two sources of counts per minute: django_bullq's own store (every worker records it by
default, :mod:`django_bullq.core.metrics`) and BullMQ's ``metrics:completed|failed`` (written
by ``moveToFinished`` only when a worker sets ``metrics_max_data_points``, as Node's
``metrics.maxDataPoints``). Each minute shows the larger of the two: a django_bullq worker with
both on counts its jobs in both (adding them would count twice), a Node worker only in
BullMQ's.
"""

from __future__ import annotations

from typing import Any

from ..core.metrics import WINDOWS, Series, Stats, per_minute, read_series
from ..core.queue import Queue
from . import charts

#: Percentiles of the run durations, and of the waits, that the page shows.
RUN_PERCENTILES = (("p50", 0.5), ("p95", 0.95), ("p99", 0.99))
WAIT_PERCENTILES = (("p50", 0.5), ("p95", 0.95))
#: How the page names a step of each window.
STEP_NAMES = {60: "minute", 300: "5 min", 900: "15 min", 3600: "hour"}


def _bullmq_counts(queue: Queue, kind: str, minutes: int) -> list[int]:
    try:
        return list(queue.get_metrics(kind, 0, minutes - 1).data)
    except Exception:  # noqa: BLE001 - BullMQ's metrics are optional
        return []


def throughput(queue: Queue, minutes: int = 60) -> dict[str, list[int]]:
    """Completed and failed jobs of each of the last ``minutes`` minutes, newest first: the
    larger of django_bullq's count and BullMQ's (module docstring).

    Returns:
        ``{"completed": [n, ...], "failed": [n, ...]}``, ``minutes`` values each.
    """
    try:
        ours = per_minute(queue, minutes)
    except Exception:  # noqa: BLE001 - the page still shows BullMQ's, or nothing
        ours = [Stats() for _ in range(minutes)]
    found: dict[str, list[int]] = {}
    for kind in ("completed", "failed"):
        theirs = _bullmq_counts(queue, kind, minutes)
        theirs += [0] * (minutes - len(theirs))
        found[kind] = [
            max(getattr(stats, kind), other) for stats, other in zip(ours, theirs, strict=False)
        ]
    return found


def sparkline(queue: Queue) -> str:
    """The overview's sparkline of ``queue``: jobs finished per minute over the last hour, as
    polyline points ("" when none finished)."""
    counts = throughput(queue)
    finished = [c + f for c, f in zip(counts["completed"], counts["failed"], strict=True)]
    return charts.sparkline(finished[::-1])


def _row(name: str, stats: Stats) -> dict[str, Any]:
    return {
        "name": name,
        "completed": stats.completed,
        "failed": stats.failed,
        "retried": stats.retried,
        "run": [stats.run_ms(f) for _, f in RUN_PERCENTILES],
        "wait": [stats.wait_ms(f) for _, f in WAIT_PERCENTILES],
    }


def page(queue: Queue, window: str, name: str | None) -> dict[str, Any]:
    """The metrics page's context: the window's series, its three charts, the totals and one
    row per job name.

    Args:
        queue: the queue. window: a key of :data:`~django_bullq.core.metrics.WINDOWS`.
        name: only this job name in the charts and totals (None: every name).

    Raises:
        ValueError: an unknown window. redis.exceptions.RedisError: Redis could not be read.
    """
    series: Series = read_series(queue, window, name)
    starts = [p.start_ms for p in series.points]
    steps = [p.stats for p in series.points]
    unit = STEP_NAMES.get(series.step_s, f"{series.step_s} s")
    return {
        "series": series,
        "step_text": unit,
        "count_chart": charts.bar_chart(
            starts,
            {
                "completed": [s.completed for s in steps],
                "failed": [s.failed for s in steps],
                "retried": [s.retried for s in steps],
            },
            unit,
        ),
        "run_chart": charts.line_chart(
            starts, {label: [s.run_ms(f) for s in steps] for label, f in RUN_PERCENTILES}
        ),
        "wait_chart": charts.line_chart(
            starts, {label: [s.wait_ms(f) for s in steps] for label, f in WAIT_PERCENTILES}
        ),
        "total": _row(name or "", series.total),
        "rows": [_row(n, s) for n, s in series.names.items()],
        "count_legend": ["completed", "failed", "retried"],
        "run_labels": [label for label, _ in RUN_PERCENTILES],
        "wait_labels": [label for label, _ in WAIT_PERCENTILES],
        "windows": list(WINDOWS),
    }
