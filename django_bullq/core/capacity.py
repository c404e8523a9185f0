"""Capacity probe: run no-op jobs on a scratch queue and say what one Redis can sustain.

It reads the server's counters around the run (:mod:`.redis_cost`) and compares three
figures, as BullMQ's own capacity articles do:

* the predicted single-core ceiling, 1,000,000 / Redis CPU µs per job;
* the measured plateau, jobs/s of the run;
* the Redis main thread's CPU over the run, % of one core.

When Redis is the bottleneck the plateau meets the ceiling with the main thread near 100%.
When the plateau is lower, the bottleneck is elsewhere: the worker's own CPU, the network
(round-trip latency × round trips per job) or persistence (an fsync per write).
"""

from __future__ import annotations

import asyncio
import statistics
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from . import redis_cost
from .connection import is_cluster
from .errors import CapacityError as CapacityError  # re-exported: its old path
from .job import Job
from .queue import Queue
from .server_info import Persistence, ServerInfo, read_server_info
from .worker import Worker, WorkerOptions

#: Fraction of one core above which Redis's main thread counts as saturated.
SATURATED = 0.85
#: The same for the probe's worker: an asyncio loop at 75% is mostly busy (the rest is the
#: wait for replies it cannot shorten).
WORKER_SATURATED = 0.75
#: How far apart the plateau's implied Redis load and the measured one may be and still agree.
AGREEMENT = 0.15
#: The share of the ceiling to plan peak load for (low, high).
PLAN_SHARE = (0.5, 0.6)
SCRATCH_PREFIX = "bullq-capacity-"
FILL_CHUNK = 1000


@dataclass(frozen=True, slots=True)
class CapacityReport:
    """The probe's findings. Rates in jobs/s, CPU in % of one core, times in µs or ms.

    Attributes:
        queue: the scratch queue it ran on (deleted afterwards).
        jobs / concurrency: size of the run and the worker's concurrency.
        commands_per_job / scripts_per_job: Redis commands (inside scripts too) and script
            calls per job.
        redis_us_per_job: Redis CPU (sys + user) per job, µs.
        ceiling_jobs_per_s: 1,000,000 / redis_us_per_job.
        plateau_jobs_per_s: jobs / (end of the last job - start of the first), measured.
        redis_cpu_pct: the Redis main thread's CPU over the run.
        worker_cpu_pct: this process's CPU over the run (the probe's worker runs here).
        rtt_ms: median PING round trip.
        persistence: see :class:`~django_bullq.core.server_info.Persistence`.
        server: the server's name, version, memory policy, persistence and I/O threads
            (:class:`~django_bullq.core.server_info.ServerInfo`), read after the run.
        bound: ``"cpu (redis)"`` | ``"cpu (worker)"`` | ``"persistence"`` | ``"network"``.
        agree: the three figures tell the same story (see :func:`verdict`).
        explanation: one paragraph saying why.
        plan_jobs_per_s: (low, high) peak load to plan for: 50-60% of the ceiling.
        workers_for_plan: processes like this probe's worker needed to carry the high end.
    """

    queue: str
    jobs: int
    concurrency: int
    commands_per_job: float
    scripts_per_job: float
    redis_us_per_job: float
    ceiling_jobs_per_s: int
    plateau_jobs_per_s: int
    redis_cpu_pct: float
    worker_cpu_pct: float
    rtt_ms: float
    persistence: Persistence
    bound: str
    agree: bool
    explanation: str
    plan_jobs_per_s: tuple[int, int]
    workers_for_plan: int
    by_command: dict[str, float] = field(default_factory=dict)
    server: ServerInfo | None = None

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready fields (the persistence block as a nested dict)."""
        return asdict(self)


@dataclass(slots=True)
class _Span:
    first: float = 0.0
    last: float = 0.0
    count: int = 0


def scratch_name() -> str:
    """A queue name no real queue uses: ``bullq-capacity-<12 hex>``."""
    return SCRATCH_PREFIX + uuid.uuid4().hex[:12]


def round_trip_ms(client: Any, pings: int = 20) -> float:
    """Median PING time, ms."""
    times = []
    for _ in range(pings):
        start = time.perf_counter()
        client.ping()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def persistence(client: Any) -> Persistence:
    """Read ``INFO`` and, when allowed, ``CONFIG GET appendfsync`` / ``save``
    (:func:`~django_bullq.core.server_info.read_server_info`)."""
    return read_server_info(client).persistence


def verdict(
    plateau: float, ceiling: float, redis_cpu: float, worker_cpu: float, persist: Persistence
) -> tuple[str, bool, str]:
    """Which bound the run hit, whether the figures agree, and why.

    Args:
        plateau / ceiling: jobs/s measured and predicted. redis_cpu / worker_cpu: % of a core.

    Returns:
        ``(bound, agree, explanation)``. The figures agree when the share of the ceiling that
        the plateau reached matches the Redis CPU share measured (within 15 points): then the
        ceiling is a sound prediction of where Redis saturates.
    """
    used = plateau / ceiling if ceiling > 0 else 0.0
    agree = abs(used - redis_cpu / 100) <= AGREEMENT
    if redis_cpu >= SATURATED * 100:
        bound = "cpu (redis)"
        why = (
            f"the Redis main thread was {redis_cpu:.0f}% busy: Redis's CPU is the limit, "
            f"and the plateau reached {used:.0%} of the predicted ceiling"
        )
    elif worker_cpu >= WORKER_SATURATED * 100:
        bound = "cpu (worker)"
        why = (
            f"the probe's worker used {worker_cpu:.0f}% of a core while Redis was "
            f"{redis_cpu:.0f}% busy: one worker process is the limit; run more worker "
            f"processes (runworker --processes) to approach the ceiling"
        )
    elif persist.fsync_per_write or persist.busy:
        bound = "persistence"
        what = (
            "appendfsync always (an fsync per write)"
            if persist.fsync_per_write
            else "an AOF rewrite or RDB save in progress"
        )
        why = f"Redis was only {redis_cpu:.0f}% busy with {what}: writes wait for the disk"
    else:
        bound = "network"
        why = (
            f"neither Redis ({redis_cpu:.0f}%) nor the worker ({worker_cpu:.0f}%) was "
            f"saturated: the jobs waited on round trips; raise concurrency or move the "
            f"workers closer to Redis"
        )
    story = "agree" if agree else "disagree (other clients, or background work, shared the server)"
    return bound, agree, f"{why}. The three figures {story}."


def _fill(queue: Queue, jobs: int) -> None:
    for start in range(0, jobs, FILL_CHUNK):
        queue.add_bulk([("bullq-capacity-noop", None)] * min(FILL_CHUNK, jobs - start))


def _run_worker(queue: Queue, options: WorkerOptions) -> _Span:
    span = _Span()

    async def noop(job: Job) -> None:
        now = time.perf_counter()
        if not span.count:
            span.first = now
        span.count += 1
        span.last = now

    worker = Worker(queue, noop, options)
    asyncio.run(worker.arun(burst=True))
    return span


def probe(
    queue_factory: Callable[[str], Queue], jobs: int = 10_000, options: WorkerOptions | None = None
) -> CapacityReport:
    """Run ``jobs`` no-op jobs on a scratch queue, then delete it (obliterate).

    Args:
        queue_factory: ``f(name) -> Queue`` on the user's connection, prefix and default job
            options; it is given a scratch name (:func:`scratch_name`).
        jobs: no-op jobs to run (>= 10).
        options: the worker's options (concurrency etc.); burst mode is used.

    Raises:
        CapacityError: Redis Cluster, fewer than 10 jobs, or jobs left unprocessed.
        redis.RedisError: Redis unreachable or INFO refused.
    """
    if jobs < 10:
        raise CapacityError("the probe needs at least 10 jobs")
    options = options or WorkerOptions(concurrency=50)
    queue = queue_factory(scratch_name())
    client = queue.client
    if is_cluster(client):
        raise CapacityError(
            "the capacity probe reads one server's counters: not on Redis "
            "Cluster (run it against one shard)"
        )
    try:
        rtt = round_trip_ms(client)
        _fill(queue, jobs)
        before, cpu_before = redis_cost.snapshot(client), time.process_time()
        span = _run_worker(queue, options)
        after, cpu_after = redis_cost.snapshot(client), time.process_time()
        server = read_server_info(client)
    finally:
        queue.obliterate(force=True)
    if span.count < jobs:
        raise CapacityError(f"only {span.count} of {jobs} jobs ran (see the worker's log)")
    return _report(
        queue.name,
        jobs,
        options.concurrency,
        redis_cost.cost(before, after, jobs),
        jobs / max(span.last - span.first, 1e-9),
        (cpu_after - cpu_before) * 100 / max(after.at - before.at, 1e-9),
        rtt,
        server,
    )


def _report(
    name: str,
    jobs: int,
    concurrency: int,
    cost: redis_cost.Cost,
    plateau: float,
    worker_cpu: float,
    rtt: float,
    server: ServerInfo,
) -> CapacityReport:
    persist = server.persistence
    if cost.cpu_us_per_job <= 0:
        raise CapacityError("Redis's CPU counters did not move: run more jobs")
    ceiling = round(cost.ceiling_jobs_per_s)  # the plan is computed from the figure shown
    redis_cpu = cost.main_thread_cpu_pct or (cost.cpu_us_per_job * cost.jobs / 1e4 / cost.seconds)
    bound, agree, why = verdict(plateau, ceiling, redis_cpu, worker_cpu, persist)
    plan = (round(ceiling * PLAN_SHARE[0]), round(ceiling * PLAN_SHARE[1]))
    return CapacityReport(
        queue=name,
        jobs=jobs,
        concurrency=concurrency,
        commands_per_job=round(cost.commands_per_job, 2),
        scripts_per_job=round(cost.scripts_per_job, 2),
        redis_us_per_job=round(cost.cpu_us_per_job, 1),
        ceiling_jobs_per_s=ceiling,
        plateau_jobs_per_s=round(plateau),
        redis_cpu_pct=round(redis_cpu, 1),
        worker_cpu_pct=round(worker_cpu, 1),
        rtt_ms=round(rtt, 3),
        persistence=persist,
        bound=bound,
        agree=agree,
        explanation=why,
        plan_jobs_per_s=plan,
        workers_for_plan=max(1, -(-plan[1] // max(round(plateau), 1))),
        by_command={k: round(v, 2) for k, v in sorted(cost.by_command.items())},
        server=server,
    )


__all__ = [
    "CapacityError",
    "CapacityReport",
    "Persistence",
    "ServerInfo",
    "probe",
    "scratch_name",
    "verdict",
]
