"""Growth runs of django_bullq: throughput beside a large completed or delayed set, worker RSS.

* completed: no-op jobs (concurrency 10) on a queue whose completed set already holds ``size``
  jobs, with retention bounded at ``size`` (``removeOnComplete`` count), so every completion
  also trims the oldest one; against the same on a queue whose set is bounded at 1,000.
* delayed: the same beside ``size`` jobs delayed by an hour, against a queue with none.

Both report jobs/s and Redis CPU µs per job; on a busy machine the second is the steadier.
* memory: one worker process runs ``size`` no-op jobs; its RSS is read at every 5%.
"""

from __future__ import annotations

import statistics
import sys
import time
from typing import Any

from django_bullq import Queue

from .harness import Measurement, Settings, measure, spec_for
from .scenarios import LIBRARIES

OURS = LIBRARIES[0]
SEED_CHUNK = 5_000
DELAY_MS = 3_600_000
#: Size of the completed set the grown one is compared with.
SMALL = 1_000


def seed_completed(client: Any, queue_name: str, size: int, prefix: str = "bull") -> None:
    """Write ``size`` completed jobs straight into Redis (hash + ``completed`` entry each).

    The hashes carry the fields a completed BullMQ job has (docs: protocol §3.1), so the
    retention trim removes them as it removes any finished job.
    """
    now = int(time.time() * 1000)
    base = f"{prefix}:{queue_name}"
    for start in range(0, size, SEED_CHUNK):
        pipe = client.pipeline(transaction=False)
        members = {}
        for i in range(start, min(start + SEED_CHUNK, size)):
            stamp = now - size + i
            pipe.hset(
                f"{base}:seed-{i}",
                mapping={
                    "name": "bench",
                    "data": f'{{"i":{i}}}',
                    "opts": '{"attempts":0}',
                    "timestamp": stamp,
                    "delay": 0,
                    "priority": 0,
                    "processedOn": stamp,
                    "ats": 1,
                    "atm": 1,
                    "returnvalue": "null",
                    "finishedOn": stamp,
                },
            )
            members[f"seed-{i}"] = stamp
        pipe.zadd(f"{base}:completed", members)
        pipe.execute()


def seed_delayed(url: str, queue_name: str, size: int) -> None:
    """Add ``size`` jobs delayed by an hour, through the normal add path."""
    queue = Queue(queue_name, url)
    try:
        for start in range(0, size, SEED_CHUNK):
            queue.add_bulk(
                [
                    ("later", {"i": i}, {"delay": DELAY_MS})
                    for i in range(start, min(start + SEED_CHUNK, size))
                ]
            )
    finally:
        queue.close()


def fill_waiting(url: str, queue_name: str, size: int) -> None:
    """Add ``size`` no-op jobs to wait (for the memory run)."""
    queue = Queue(queue_name, url)
    try:
        for start in range(0, size, SEED_CHUNK):
            queue.add_bulk(
                [("bench", {"i": i}) for i in range(start, min(start + SEED_CHUNK, size))]
            )
    finally:
        queue.close()


def _compare(
    settings: Settings,
    client: Any,
    small: str,
    grown: str,
    jobs: int,
    rounds: int,
    keep: tuple[int | None, int | None],
) -> dict[str, Any]:
    """Medians of jobs/s and Redis CPU µs per job on ``small`` and ``grown``, interleaved.

    Args:
        keep: ``removeOnComplete`` count of the small and of the grown queue (None = keep all).
    """
    rates: dict[str, list[float]] = {small: [], grown: []}
    cpu: dict[str, list[float]] = {small: [], grown: []}
    for _ in range(rounds):
        for name, kept in ((small, keep[0]), (grown, keep[1])):
            spec = spec_for(settings, name, "process", jobs, 10, keep_completed=kept)
            m = measure(OURS, spec, settings, client)
            _note(name, m)
            if m.ok:
                rates[name].append(m.jobs_per_second)
                cpu[name].append(m.cost["cpu_us_per_job"])
    if not (rates[small] and rates[grown]):
        return {"error": "a run failed (see the log)"}
    base, big = statistics.median(rates[small]), statistics.median(rates[grown])
    base_cpu, big_cpu = statistics.median(cpu[small]), statistics.median(cpu[grown])
    return {
        "small_jobs_per_s": round(base),
        "grown_jobs_per_s": round(big),
        "change_pct": round((big - base) * 100 / base, 1),
        "small_redis_us_per_job": round(base_cpu, 1),
        "grown_redis_us_per_job": round(big_cpu, 1),
        "redis_us_change_pct": round((big_cpu - base_cpu) * 100 / base_cpu, 1),
    }


def _note(name: str, m: Measurement) -> None:
    text = m.error or (
        f"{m.jobs_per_second:,.0f} jobs/s, {m.cost.get('cpu_us_per_job', 0):.0f} µs Redis CPU/job"
    )
    print(f"[growth] {name:24} {text}", file=sys.stderr, flush=True)


def completed_growth(
    settings: Settings, client: Any, size: int, jobs: int, rounds: int
) -> dict[str, Any]:
    """A completed set of ``size`` jobs against one of :data:`SMALL`, each kept at its size.

    Both queues trim one old job per completion, so the comparison isolates the set's size.
    """
    client.flushall()
    small = min(SMALL, size)
    seed_completed(client, "bench-small", small)
    seed_completed(client, "bench-grown", size)
    out = _compare(settings, client, "bench-small", "bench-grown", jobs, rounds, keep=(small, size))
    out["completed_set"] = int(client.zcard("bull:bench-grown:completed"))
    return {"size": size, "small_size": small, **out}


def delayed_growth(
    settings: Settings, client: Any, size: int, jobs: int, rounds: int
) -> dict[str, Any]:
    """Throughput beside ``size`` delayed jobs against a queue with none."""
    client.flushall()
    seed_delayed(settings.url, "bench-grown", size)
    out = _compare(settings, client, "bench-small", "bench-grown", jobs, rounds, keep=(None, None))
    out["delayed_set"] = int(client.zcard("bull:bench-grown:delayed"))
    return {"size": size, "small_size": 0, **out}


def worker_memory(settings: Settings, client: Any, size: int) -> dict[str, Any]:
    """RSS of one worker process over ``size`` jobs (completed jobs removed at once)."""
    client.flushall()
    fill_waiting(settings.url, "bench-memory", size)
    spec = spec_for(settings, "bench-memory", "memory", size, 10, keep_completed=True)
    spec["max_seconds"] = 0
    m = measure(OURS, spec, settings, client)
    _note("bench-memory", m)
    samples = list(m.extra.get("rss_mb", []))
    if not m.ok or len(samples) < 3:
        return {"size": size, "error": m.error or "too few RSS samples"}
    # Index 1 is the 10% mark: after the start-up allocations, before the long haul.
    start, end = samples[1], samples[-1]
    return {
        "size": size,
        "jobs": m.jobs,
        "rss_mb_at_5pct": samples[0],
        "rss_mb_at_10pct": start,
        "rss_mb_at_end": end,
        "rss_mb_max": max(samples),
        "growth_from_10pct_pct": round((end - start) * 100 / start, 1),
        "jobs_per_s": round(m.jobs_per_second),
        "rss_mb_samples": samples,
    }
