"""``manage.py weather_report``: the example project's main job, end to end.

Three stages, each enqueued here and then run by ``manage.py runworker weather --burst``
(no flows: a stage is enqueued once the previous one has finished):

1. import: the 1461 rows of seattle-weather.csv in chunks of 100, one job a chunk;
2. aggregate: monthly and yearly statistics over the imported days;
3. report: email the report (file backend) and publish it (the flaky step: its first attempt
   fails, BullMQ retries it after a backoff, the second attempt succeeds).

A burst worker exits when nothing is runnable, and a retry waits in ``delayed`` for its backoff,
so a stage runs bursts until all its jobs have finished. Finally it prints what was done.
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

import redis
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser

from django_bullq import Job
from django_bullq.conf import get_queue
from weather import tasks, work
from weather.dataset import CSV_NAME, chunks, read_rows
from weather.models import DailyWeather, Report

FINISHED = ("completed", "failed")


def _job(enqueued: object) -> Job:
    """The Job an ``enqueue`` returned (outside ``atomic()`` it is always a Job)."""
    if not isinstance(enqueued, Job):
        raise CommandError(f"expected a Job from enqueue, got {enqueued!r} (inside atomic()?)")
    return enqueued


class Command(BaseCommand):
    """Enqueue the weather batch stage by stage, run it with burst workers, print the result."""

    help = (
        "Import seattle-weather.csv in chunks, aggregate it, email and publish a report: "
        "all as jobs on the 'weather' queue, run by `runworker --burst`."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        """``--chunk-size``, ``--concurrency`` and ``--timeout``."""
        parser.add_argument(
            "--chunk-size", type=int, default=100, help="CSV rows per import job (default 100)"
        )
        parser.add_argument(
            "--concurrency",
            type=int,
            default=4,
            help="jobs the burst worker runs at once (default 4)",
        )
        parser.add_argument(
            "--timeout",
            type=float,
            default=120.0,
            help="seconds a stage may take before giving up (default 120)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        """Run the three stages and print what they did.

        Raises:
            CommandError: a job failed for good, or a stage did not finish in ``--timeout``.
        """
        if options["chunk_size"] < 1 or options["concurrency"] < 1:
            raise CommandError("--chunk-size and --concurrency must be >= 1")
        self.concurrency: int = options["concurrency"]
        # The worker's own log (one line per start and stop) only from -v 2 on.
        self.worker_verbosity = max(0, int(options["verbosity"]) - 1)
        self.timeout: float = options["timeout"]
        try:
            get_queue(tasks.QUEUE).client.ping()
        except redis.RedisError as exc:
            raise CommandError(
                f"no Redis at {settings.REDIS_URL} ({exc}); start one with "
                f"`make redis-up` or set REDIS_URL"
            ) from exc
        rows = read_rows()
        report = Report.objects.create()
        run_jobs: list[Job] = []
        self.say(
            f"Seattle weather from vega-datasets' {CSV_NAME}: {len(rows)} rows, "
            f"{rows[0].date} .. {rows[-1].date}; queue '{tasks.QUEUE}', report #{report.pk}"
        )

        ranges = chunks(options["chunk_size"])
        self.heading(f"[1/3] import: {len(ranges)} jobs of up to {options['chunk_size']} rows")
        imports = [_job(tasks.import_chunk.enqueue(start, stop)) for start, stop in ranges]
        run_jobs += self.run_stage(imports)
        imported = sum(int(job.returnvalue["rows"]) for job in imports)
        Report.objects.filter(pk=report.pk).update(rows_imported=imported)
        self.say(
            f"rows imported: {imported} (DailyWeather holds {DailyWeather.objects.count()} days)"
        )

        self.heading("[2/3] aggregate: 1 job")
        aggregate = _job(tasks.aggregate_weather.enqueue())
        run_jobs += self.run_stage([aggregate])
        counts = aggregate.returnvalue
        self.say(
            f"aggregated {counts['days']} days into {counts['months']} months and "
            f"{counts['years']} years:"
        )
        for line in work.yearly_table():
            self.say("  " + line)
        for line in work.highlights():
            self.say("  " + line)

        self.heading(
            "[3/3] report: email it, publish it (flaky: attempts=3, "
            "exponential backoff from 500 ms)"
        )
        email = _job(tasks.email_report.enqueue(report.pk))
        publish = _job(tasks.publish_report.enqueue(report.pk))
        run_jobs += self.run_stage([email, publish])
        report.refresh_from_db()
        self.say(f"email file: {report.email_file or '(none)'}")
        self.say(
            f"publish: job {publish.id} {publish.get_state()} after "
            f"{publish.attempts_made} attempts (of {publish.attempts}); "
            f"the task ran {report.publish_attempts} times"
        )
        if publish.failed_reason:
            self.say(f"  first attempt failed with: {publish.failed_reason}")

        self.heading("jobs")
        states = Counter(job.get_state() for job in run_jobs)
        self.say(
            f"this run: {len(run_jobs)} jobs: "
            + ", ".join(f"{state} {n}" for state, n in sorted(states.items()))
        )
        totals = get_queue(tasks.QUEUE).get_job_counts()
        self.say(
            f"queue '{tasks.QUEUE}' now: "
            + ", ".join(f"{state} {n}" for state, n in totals.items())
        )
        if set(states) != {"completed"}:
            raise CommandError(
                "some jobs did not complete: "
                + ", ".join(
                    f"{job.id} ({job.name}): {job.failed_reason}"
                    for job in run_jobs
                    if job.get_state() != "completed"
                )
            )
        self.say(self.style.SUCCESS(f"done: report #{report.pk}"))

    # --- helpers ---------------------------------------------------------------------------

    def say(self, line: str) -> None:
        """Print one line."""
        self.stdout.write(line)

    def heading(self, line: str) -> None:
        """Print one heading line."""
        self.stdout.write(self.style.MIGRATE_HEADING(line))

    def run_stage(self, jobs: list[Job]) -> list[Job]:
        """Run ``runworker --burst`` until every job of ``jobs`` has finished; refresh them.

        Raises:
            CommandError: a job failed for good, or the stage took longer than ``--timeout``.
        """
        started = time.monotonic()
        bursts = 0
        while True:
            call_command(
                "runworker",
                tasks.QUEUE,
                burst=True,
                concurrency=self.concurrency,
                verbosity=self.worker_verbosity,
            )
            bursts += 1
            for job in jobs:
                job.refresh()
            pending = [job for job in jobs if job.get_state() not in FINISHED]
            if not pending:
                break
            if time.monotonic() - started > self.timeout:
                raise CommandError(
                    f"{len(pending)} jobs still unfinished after "
                    f"{self.timeout:.0f} s: {[job.id for job in pending]}"
                )
            time.sleep(0.2)  # a retry waits in 'delayed' for its backoff
        failed = [job for job in jobs if job.get_state() == "failed"]
        if failed:
            raise CommandError(
                "; ".join(
                    f"job {job.id} ({job.name}) failed: {job.failed_reason}" for job in failed
                )
            )
        self.say(
            f"runworker {tasks.QUEUE} --burst --concurrency {self.concurrency}: "
            f"{_plural(len(jobs), 'job')} completed in {time.monotonic() - started:.2f} s "
            f"({_plural(bursts, 'burst')})"
        )
        return jobs


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"
