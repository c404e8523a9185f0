"""Reading the metrics store: per queue and per job name, counts per step and duration
percentiles over a window of 1 h, 6 h, 24 h or 72 h.

The 1 h, 6 h and 24 h windows read the minute keys (60, 360, 1440 of them, one pipelined
round trip) and sum them into 60, 72 and 96 points; 72 h reads the 72 hour keys. Nothing is
written.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..options import now_ms as _now_ms
from . import store
from .histogram import merge, percentile

if TYPE_CHECKING:
    from ..queue import Queue


@dataclass(frozen=True, slots=True)
class Window:
    """A span the reader shows: ``seconds`` long, one point per ``step_s`` s, read from the
    minute keys (``"m"``) or the hour keys (``"h"``)."""

    seconds: int
    step_s: int
    level: str


#: The windows by name, shortest first.
WINDOWS: dict[str, Window] = {
    "1h": Window(3600, 60, "m"),
    "6h": Window(6 * 3600, 300, "m"),
    "24h": Window(24 * 3600, 900, "m"),
    "72h": Window(72 * 3600, 3600, "h"),
}


@dataclass(slots=True)
class Stats:
    """Counts and histograms of some attempts (one step, or a whole window).

    Attributes:
        completed / failed / retried: jobs completed, failed for good, attempts retried.
        run: run-duration histogram ``{bucket: attempts}`` (every counted attempt).
        wait: wait histogram ``{bucket: jobs}`` (first attempts).
    """

    completed: int = 0
    failed: int = 0
    retried: int = 0
    run: dict[int, int] = field(default_factory=dict)
    wait: dict[int, int] = field(default_factory=dict)

    def add_entry(self, entry: Any) -> None:
        """Add one stored entry ``[completed, failed, retried, run, wait]``
        (:mod:`~django_bullq.core.metrics.store`); a malformed one adds nothing."""
        if not isinstance(entry, list) or len(entry) != 5:
            return
        try:
            counts = [int(n) for n in entry[:3]]
        except (TypeError, ValueError):
            return
        self.completed += counts[0]
        self.failed += counts[1]
        self.retried += counts[2]
        merge(self.run, store.sparse(entry[store.RUN]))
        merge(self.wait, store.sparse(entry[store.WAIT]))

    def absorb(self, other: Stats) -> None:
        """Add ``other``'s counts and histograms to these."""
        self.completed += other.completed
        self.failed += other.failed
        self.retried += other.retried
        merge(self.run, other.run)
        merge(self.wait, other.wait)

    @property
    def finished(self) -> int:
        """Jobs completed or failed for good."""
        return self.completed + self.failed

    def run_ms(self, fraction: float) -> float | None:
        """The ``fraction`` (0..1) percentile of the run durations, ms; None without runs."""
        return percentile(self.run, fraction)

    def wait_ms(self, fraction: float) -> float | None:
        """The ``fraction`` (0..1) percentile of the waits, ms; None without waits."""
        return percentile(self.wait, fraction)


@dataclass(slots=True)
class Point:
    """One step of a series: ``start_ms`` (epoch ms) and its :class:`Stats`."""

    start_ms: int
    stats: Stats = field(default_factory=Stats)


@dataclass(slots=True)
class Series:
    """What :func:`read_series` found.

    Attributes:
        window: the window's name (``"1h"``...). step_s: s per point.
        name: the job name the points and ``total`` are of, None for every name.
        points: one per step, oldest first, the last one holding the current minute.
        total: the whole window (of ``name``, or of every name).
        names: job name -> its :class:`Stats` over the window (every name, whatever
            ``name`` is), sorted by name.
    """

    window: str
    step_s: int
    name: str | None
    points: list[Point]
    total: Stats
    names: dict[str, Stats]


def read_series(
    queue: Queue, window: str = "1h", name: str | None = None, *, now_ms: int | None = None
) -> Series:
    """The metrics of ``queue`` over ``window`` (a key of :data:`WINDOWS`).

    Args:
        queue: the :class:`~django_bullq.core.queue.Queue` (its sync client reads).
        window: ``"1h"``, ``"6h"``, ``"24h"`` or ``"72h"``.
        name: only this job name in ``points`` and ``total`` (None: every name).
        now_ms: the window's end, epoch ms (default now).

    Raises:
        ValueError: an unknown window.
        redis.exceptions.RedisError: Redis could not be read.
    """
    if window not in WINDOWS:
        raise ValueError(f"unknown metrics window {window!r} (known: {', '.join(WINDOWS)})")
    spec = WINDOWS[window]
    end_ms = _now_ms() if now_ms is None else now_ms
    unit_ms = 60_000 if spec.level == "m" else 3_600_000
    step_ms = spec.step_s * 1000
    # whole steps, the last one holding now: the first step may start before the window
    last_step = end_ms // step_ms
    first_step = last_step - spec.seconds // spec.step_s + 1
    points = [Point(step * step_ms) for step in range(first_step, last_step + 1)]
    buckets = range(first_step * step_ms // unit_ms, end_ms // unit_ms + 1)
    key_of = store.minute_key if spec.level == "m" else store.hour_key
    pipe = queue.client.pipeline(transaction=False)
    for b in buckets:
        pipe.get(key_of(queue.keys, b))
    replies = pipe.execute()
    names: dict[str, Stats] = {}
    for b, reply in zip(buckets, replies, strict=True):
        point = points[b * unit_ms // step_ms - first_step].stats
        _add_bucket(reply, point, names, name)
    total = Stats()
    for p in points:
        total.absorb(p.stats)
    return Series(window, spec.step_s, name, points, total, dict(sorted(names.items())))


def _add_bucket(reply: Any, point: Stats, names: dict[str, Stats], only: str | None) -> None:
    """Add one stored bucket (JSON text, or None) to its point (the names ``only``, or all)
    and to ``names``."""
    if not reply:
        return
    try:
        found = json.loads(reply)
    except ValueError:
        return
    if not isinstance(found, dict):
        return
    for job_name, entry in found.items():
        stats = names.get(job_name)
        if stats is None:
            stats = names[job_name] = Stats()
        stats.add_entry(entry)
        if only is None or job_name == only:
            point.add_entry(entry)


def per_minute(queue: Queue, minutes: int = 60, *, now_ms: int | None = None) -> list[Stats]:
    """The last ``minutes`` minutes of ``queue``, every name summed, newest first (the
    queue page's throughput chart and the overview's sparkline).

    Raises:
        redis.exceptions.RedisError: Redis could not be read.
    """
    end_ms = _now_ms() if now_ms is None else now_ms
    last = end_ms // 60_000
    pipe = queue.client.pipeline(transaction=False)
    for minute in range(last, last - minutes, -1):
        pipe.get(store.minute_key(queue.keys, minute))
    found: list[Stats] = []
    for reply in pipe.execute():
        stats = Stats()
        _add_bucket(reply, stats, {}, None)
        found.append(stats)
    return found
