"""What a stretch of work cost the Redis server: commands and CPU from two ``INFO`` snapshots.

Used by ``manage.py bullq capacity`` and by ``make bench``. The figures are server-wide: on a
shared Redis they include every other client's traffic over the same stretch.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

#: Commands the measuring side itself sends; left out of the per-job counts.
OBSERVER_COMMANDS = frozenset(
    {"info", "ping", "config|get", "config", "client|setname", "client|list", "hello", "select"}
)
#: Commands that run a script; the commands a script runs are counted under their own names.
SCRIPT_COMMANDS = frozenset({"eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro"})


@dataclass(frozen=True, slots=True)
class Snapshot:
    """One reading of the server's counters.

    Attributes:
        at: ``time.monotonic()`` of the reading, s.
        calls: command name -> calls since start (``INFO commandstats``; subcommands as
            ``config|get``).
        cpu_s: ``used_cpu_sys + used_cpu_user``, s of CPU of the whole server process.
        main_cpu_s: the same for the main thread only (0.0 before Redis 6.2), s.
    """

    at: float
    calls: dict[str, int]
    cpu_s: float
    main_cpu_s: float


@dataclass(frozen=True, slots=True)
class Cost:
    """The server's cost of ``jobs`` jobs between two snapshots.

    Attributes:
        jobs: the number of jobs the stretch did.
        seconds: wall time between the snapshots, s.
        commands_per_job: commands run per job, those inside scripts included.
        scripts_per_job: script calls (EVAL / EVALSHA / FCALL) per job.
        cpu_us_per_job: server CPU (sys + user) per job, µs.
        main_thread_cpu_pct: the main thread's CPU over the stretch, % of one core.
        by_command: command name -> calls per job (observer commands left out).
    """

    jobs: int
    seconds: float
    commands_per_job: float
    scripts_per_job: float
    cpu_us_per_job: float
    main_thread_cpu_pct: float
    by_command: dict[str, float]

    @property
    def ceiling_jobs_per_s(self) -> float:
        """Predicted single-core ceiling: 1,000,000 / ``cpu_us_per_job`` (inf when unmeasurable)."""
        return 1_000_000 / self.cpu_us_per_job if self.cpu_us_per_job > 0 else float("inf")

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready fields (rounded), ``by_command`` included."""
        return {
            "jobs": self.jobs,
            "seconds": round(self.seconds, 3),
            "commands_per_job": round(self.commands_per_job, 2),
            "scripts_per_job": round(self.scripts_per_job, 2),
            "cpu_us_per_job": round(self.cpu_us_per_job, 1),
            "main_thread_cpu_pct": round(self.main_thread_cpu_pct, 1),
            "by_command": {k: round(v, 2) for k, v in sorted(self.by_command.items())},
        }


def snapshot(client: Any) -> Snapshot:
    """Read ``INFO commandstats`` and ``INFO cpu`` with a sync redis-py client.

    Raises:
        redis.RedisError: the server cannot be read (INFO disabled, connection lost).
    """
    stats = client.info("commandstats")
    cpu = client.info("cpu")
    calls = {
        name.removeprefix("cmdstat_"): int(value["calls"])
        for name, value in stats.items()
        if isinstance(value, dict)
    }
    return Snapshot(
        at=time.monotonic(),
        calls=calls,
        cpu_s=float(cpu["used_cpu_sys"]) + float(cpu["used_cpu_user"]),
        main_cpu_s=float(cpu.get("used_cpu_sys_main_thread", 0.0))
        + float(cpu.get("used_cpu_user_main_thread", 0.0)),
    )


def cost(before: Snapshot, after: Snapshot, jobs: int) -> Cost:
    """The per-job cost of the work done between ``before`` and ``after``.

    Args:
        before / after: snapshots of :func:`snapshot`, in that order.
        jobs: jobs done between them (>= 1).

    Raises:
        ValueError: ``jobs`` < 1.
    """
    if jobs < 1:
        raise ValueError("jobs must be >= 1")
    delta = {name: n - before.calls.get(name, 0) for name, n in after.calls.items()}
    counted = {name: n for name, n in delta.items() if n > 0 and name not in OBSERVER_COMMANDS}
    seconds = max(after.at - before.at, 1e-9)
    return Cost(
        jobs=jobs,
        seconds=seconds,
        commands_per_job=sum(counted.values()) / jobs,
        scripts_per_job=sum(n for name, n in counted.items() if name in SCRIPT_COMMANDS) / jobs,
        cpu_us_per_job=(after.cpu_s - before.cpu_s) * 1e6 / jobs,
        main_thread_cpu_pct=(after.main_cpu_s - before.main_cpu_s) * 100 / seconds,
        by_command={name: n / jobs for name, n in counted.items()},
    )


__all__ = ["Cost", "Snapshot", "cost", "snapshot"]
