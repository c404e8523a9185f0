"""Read-side helpers of the admin pages: queues, workers, latency, pages.

Every read is bounded: a job list reads one LRANGE/ZRANGE page plus one HGETALL per job on the
page. The filters are :mod:`django_bullq.admin.search` (bounded walks of their own).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from ..core.job import STATES, Job
from ..core.queue import Queue
from ..core.worker_clients import ClientLists, worker_connections
from ..live.snapshots import pretty_json

#: Jobs per page of a job list.
PAGE_SIZE = 50
#: Characters of data / return value / stack trace shown before truncation on the detail page.
MAX_SHOWN = 100_000
#: Log lines shown on the detail page (newest).
MAX_LOGS = 200


def workers(queue: Queue, clients: ClientLists | None = None) -> list[dict[str, str]]:
    """Connections named like BullMQ workers of ``queue``: ``<prefix>:<base64(name)>[:w:<x>]``
    (BullMQ ``Queue.getWorkers``).

    Args:
        queue: the queue. clients: the page's :class:`ClientLists`, shared by its queues;
            None reads ``CLIENT LIST`` for this queue alone.

    Returns:
        ``[{"name": worker name or "", "addr": "host:port", "age": seconds, "idle": seconds}]``.
    """
    return [
        {
            "name": name,
            "addr": str(client.get("addr", "")),
            "age": str(client.get("age", "")),
            "idle": str(client.get("idle", "")),
        }
        for name, client in worker_connections(queue, clients)
    ]


def waiting_latency_ms(queue: Queue) -> int | None:
    """Age in ms of the oldest waiting job (None when nothing waits)."""
    ids = queue.get_job_ids("waiting", start=0, end=0, asc=True)
    if not ids:
        return None
    # getJobFields: a key that is not a hash reads as a job without fields, not an error
    (row,) = queue.get_job_fields(ids[:1], ["timestamp"])
    if row is None:
        return None
    try:
        return max(0, int(time.time() * 1000) - int(row[0]))
    except (TypeError, ValueError):
        return None


def throughput_bars(
    queue: Queue, points: int = 60, width: int = 600, height: int = 80
) -> dict[str, Any]:
    """Bars of the last ``points`` minutes of completed/failed jobs for the inline SVG.

    Returns:
        ``{"bars": [{"x", "y", "h", "w", "kind", "value"}], "width", "height", "max", "any"}``.
    """
    from .metrics import throughput  # django_bullq's metrics, or BullMQ's (admin/metrics.py)

    series = throughput(queue, points)
    top = max([1] + series["completed"] + series["failed"])
    slot = width / points
    bars = []
    for kind, offset in (("completed", 0.0), ("failed", slot / 2)):
        for i, value in enumerate(series[kind][:points]):
            h = round(height * value / top, 1)
            x = round(width - (i + 1) * slot + offset, 1)
            bars.append(
                {
                    "x": x,
                    "y": round(height - h, 1),
                    "h": h,
                    "w": round(slot / 2 - 0.5, 1),
                    "kind": kind,
                    "value": value,
                }
            )
    return {
        "bars": bars,
        "width": width,
        "height": height,
        "max": top,
        "any": any(series["completed"]) or any(series["failed"]),
    }


@dataclass
class JobPage:
    """One page of a state's job list."""

    state: str
    total: int
    page: int
    pages: int
    jobs: list[Job] = field(default_factory=list)


def job_page(queue: Queue, state: str, page: int) -> JobPage:
    """Jobs of ``state`` on ``page`` (1-based, newest first; past the last: the last)."""
    total = queue.get_job_counts(state)[state]
    pages = max(1, -(-total // PAGE_SIZE))
    page = min(max(1, page), pages)
    start = (page - 1) * PAGE_SIZE
    jobs = queue.get_jobs(state, start=start, end=start + PAGE_SIZE - 1)
    return JobPage(state, total, page, pages, jobs)


def pretty(value: Any) -> str:
    """``value`` as indented JSON (:func:`~django_bullq.live.snapshots.pretty_json`), truncated
    to :data:`MAX_SHOWN` characters."""
    return truncate(pretty_json(value))


def truncate(text: str) -> str:
    """``text`` cut to :data:`MAX_SHOWN` characters with a marker saying how much was cut."""
    if len(text) <= MAX_SHOWN:
        return text
    return f"{text[:MAX_SHOWN]}\n… ({len(text) - MAX_SHOWN} more characters not shown)"


def split_job_key(key: str, prefix: str) -> tuple[str, str] | None:
    """``(queue, job_id)`` of a full job key ``<prefix>:<queue>:<id>`` (None if foreign)."""
    if not key.startswith(prefix + ":"):
        return None
    rest = key[len(prefix) + 1 :]
    if ":" not in rest:
        return None
    name, job_id = rest.split(":", 1)
    return name, job_id


ALL_STATES = STATES
