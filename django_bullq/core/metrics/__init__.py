"""django_bullq's own job metrics (docs/metrics.md): what every worker records per queue, job
name and minute, kept 72 h in Redis, and how the admin reads it.

BullMQ's own metrics (``metrics:completed``, written by ``moveToFinished`` when a worker sets
``metrics_max_data_points``) are separate and stay off by default; these are recorded in the
worker's memory and flushed every few seconds, so the Lua path of a job is unchanged.
"""

from .reader import WINDOWS, Point, Series, Stats, per_minute, read_series
from .recorder import FLUSH_INTERVAL_S, MetricsRecorder

__all__ = [
    "FLUSH_INTERVAL_S",
    "WINDOWS",
    "MetricsRecorder",
    "Point",
    "Series",
    "Stats",
    "per_minute",
    "read_series",
]
