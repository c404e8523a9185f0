"""``manage.py bullq capacity``: what your Redis can carry (docs/capacity.md).

``manage.py bullq capacity [--queue NAME] [--jobs N] [--concurrency C] [--json]`` runs N no-op
jobs on a scratch queue with the connection, prefix and default job options of NAME (never NAME
itself) and reports Redis's cost per job, the predicted ceiling, the measured plateau, the Redis
main thread's CPU, the bound that was hit and the peak load to plan for.
"""

from __future__ import annotations

import json
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from django_bullq.conf import (
    bullq_settings,
    get_connection,
    queue_config,
    worker_options,
)
from django_bullq.core.capacity import CapacityError, CapacityReport, probe
from django_bullq.core.clients import CLIENT_ERRORS
from django_bullq.core.options import JobOptions
from django_bullq.core.queue import Queue
from django_bullq.exceptions import ConfigurationError

HELP = "run no-op jobs on a scratch queue and report Redis's capacity"


def add_arguments(parser: ArgumentParser) -> None:
    """``--queue``, ``--jobs``, ``--concurrency``, ``--json``."""
    parser.add_argument(
        "--queue",
        default=None,
        help="take connection, PREFIX and DEFAULT_JOB_OPTIONS from this "
        "queue's BULLQ entry (default BULLQ['DEFAULT_QUEUE']); the "
        "jobs go to a scratch queue, deleted afterwards",
    )
    parser.add_argument(
        "--jobs", type=int, default=10_000, help="no-op jobs to run (default 10000)"
    )
    parser.add_argument(
        "--concurrency", type=int, default=50, help="the probe worker's concurrency (default 50)"
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")


def handle(command: BaseCommand, **options: Any) -> int:
    """Run the probe and print the report; returns the exit code (0).

    Raises:
        CommandError: bad flags, bad settings, or Redis errors.
    """
    if options["jobs"] < 10:
        raise CommandError("--jobs must be >= 10")
    if options["concurrency"] < 1:
        raise CommandError("--concurrency must be >= 1")
    name = options["queue"] or bullq_settings.DEFAULT_QUEUE
    try:
        entry = queue_config(name)
        defaults = JobOptions(**entry["DEFAULT_JOB_OPTIONS"])
        connection = get_connection(entry["CONNECTION"])
        worker = worker_options(
            concurrency=options["concurrency"], name="bullq-capacity", maintenance_interval_ms=0
        )
        report = probe(
            lambda scratch: Queue(
                scratch, connection, prefix=entry["PREFIX"], default_job_options=defaults
            ),
            options["jobs"],
            worker,
        )
    except (ConfigurationError, CapacityError, TypeError, ValueError) as exc:
        raise CommandError(str(exc)) from exc
    except CLIENT_ERRORS as exc:
        raise CommandError(f"Redis: {exc}") from exc
    if options["json"]:
        command.stdout.write(json.dumps(report.as_dict(), indent=2))
    else:
        command.stdout.write(format_report(report))
    return 0


def format_report(r: CapacityReport) -> str:
    """The report as aligned text lines (units in the labels)."""
    p = r.persistence
    server = r.server
    facts: list[tuple[str, str]] = []
    if server is not None:
        facts = [
            (
                "server",
                f"{server.server} {server.version}" + (f" ({server.mode})" * bool(server.mode)),
            ),
            (
                "memory policy",
                server.policy or "unknown"
                if not server.policy_warning
                else f"{server.policy} (WARNING: keys may be evicted; BullMQ needs noeviction)",
            ),
            ("I/O threads", server.describe_io_threads().removeprefix("io-threads ")),
        ]
    rows = [
        *facts,
        (
            "scratch queue",
            f"{r.queue} ({r.jobs:,} no-op jobs, concurrency {r.concurrency}; deleted)",
        ),
        ("commands per job", f"{r.commands_per_job:.1f} ({r.scripts_per_job:.2f} script calls)"),
        ("Redis CPU per job", f"{r.redis_us_per_job:.1f} µs"),
        (
            "predicted ceiling",
            f"{r.ceiling_jobs_per_s:,} jobs/s (1,000,000 / µs per job, one Redis core)",
        ),
        ("measured plateau", f"{r.plateau_jobs_per_s:,} jobs/s (one worker process)"),
        ("Redis main thread", f"{r.redis_cpu_pct:.0f}% of a core"),
        ("worker process", f"{r.worker_cpu_pct:.0f}% of a core"),
        ("round trip", f"{r.rtt_ms:.3f} ms (PING)"),
        ("persistence", p.describe()),
        ("bound", r.bound),
        ("figures agree", "yes" if r.agree else "no"),
        (
            "plan peak load for",
            f"{r.plan_jobs_per_s[0]:,}–{r.plan_jobs_per_s[1]:,} jobs/s "
            f"(50–60% of the ceiling; ≈ {r.workers_for_plan} worker "
            "process(es) like this one)",
        ),
    ]
    width = max(len(label) for label, _ in rows)
    lines = [f"{label:<{width}}  {value}" for label, value in rows]
    said = [f"warning: {w}." for w in (server.warnings() if server is not None else [])]
    return "\n".join([*lines, "", r.explanation, *said])
