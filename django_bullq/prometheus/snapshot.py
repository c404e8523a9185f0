"""What one scrape reads of a queue, in two pipelined round trips (plus one ``CLIENT LIST``
per Redis server for the workers): job counts by state, the paused flag, the age of the
oldest waiting job and the all-time metrics totals. Django-free (redis-py only).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..core.calls import Read, reads
from ..core.job import STATES
from ..core.metrics.store import TOTALS
from ..core.metrics.totals import Totals, parse_totals
from ..core.serialization import to_str
from ..core.worker_clients import ClientLists, worker_connections

if TYPE_CHECKING:
    from ..core.queue import Queue


@dataclass
class QueueSnapshot:
    """One queue as a scrape saw it.

    Attributes:
        name: the queue's name.
        counts: jobs per BullMQ state (:data:`~django_bullq.core.job.STATES`).
        paused: the queue is paused (``meta.paused``).
        latency_s: age in s of the oldest job ready to run (the wait list's oldest and the
            next prioritized job, from ``timestamp + delay``, or from its last attempt's start
            for a job back in wait); 0 when none waits.
        workers: connections named as workers of this queue (BullMQ ``getWorkers``).
        totals: the all-time metrics totals (:mod:`django_bullq.core.metrics.totals`).
    """

    name: str
    counts: dict[str, int] = field(default_factory=dict)
    paused: bool = False
    latency_s: float = 0.0
    workers: int = 0
    totals: Totals = field(default_factory=Totals)


def worker_count(queue: Queue, clients: ClientLists) -> int:
    """Connections of ``queue``'s workers (BullMQ's worker name, ``Queue.getWorkers``)."""
    return len(worker_connections(queue, clients))


def _first_read(queue: Queue) -> Read[tuple[dict[str, int], bool, list[str], Totals]]:
    keys = queue.keys
    counts = reads.job_counts(keys, STATES)
    commands = (
        *counts.commands,
        ("HEXISTS", keys["meta"], "paused"),
        ("LRANGE", keys["wait"], -1, -1),
        ("ZRANGE", keys["prioritized"], 0, 0),
        ("HGETALL", keys[TOTALS]),
    )
    n = len(counts.commands)

    def parse(replies: list[Any]) -> tuple[dict[str, int], bool, list[str], Totals]:
        ids = [to_str(i) or "" for i in [*replies[n + 1], *replies[n + 2]]]
        return counts.parse(replies[:n]), bool(replies[n]), ids, parse_totals(replies[n + 3])

    return Read(commands, parse)  # MULTI/EXEC: the counts of one instant


def _oldest_ready_ms(queue: Queue, ids: list[str]) -> Read[int | None]:
    """The epoch ms since which the oldest of ``ids`` could run: ``timestamp + delay``, or for
    a job back in wait after an attempt (retried, stalled) its last start, ``processedOn``."""
    fields = ("timestamp", "delay", "processedOn")
    commands = tuple(("HMGET", queue.keys.job(i), *fields) for i in ids)

    def parse(replies: list[Any]) -> int | None:
        ready = []
        for timestamp, delay, started in replies:
            try:
                since = int(to_str(timestamp) or "") + int(to_str(delay) or 0)
                ready.append(max(since, int(to_str(started) or 0)))
            except ValueError:
                continue
        return min(ready) if ready else None

    return Read(commands, parse, transaction=False)


def read_snapshot(queue: Queue, clients: ClientLists, now_ms: int) -> QueueSnapshot:
    """Read ``queue`` for a scrape at ``now_ms`` (epoch ms).

    Raises:
        redis.RedisError: its Redis could not be read (the collector reports the queue down).
    """
    counts, paused, ids, totals = queue._read(_first_read(queue))
    oldest = queue._read(_oldest_ready_ms(queue, ids)) if ids else None
    return QueueSnapshot(
        name=queue.name,
        counts=counts,
        paused=paused,
        latency_s=max(0, now_ms - oldest) / 1000 if oldest is not None else 0.0,
        workers=worker_count(queue, clients),
        totals=totals,
    )
