"""``manage.py runworker [queue ...]``: run BullMQ workers for Django tasks.

List ``django_bullq`` above ``channels`` in ``INSTALLED_APPS``: Channels ships a command of the
same name and the app listed first owns it (system check ``django_bullq.W001``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import sys
import tempfile
from collections.abc import Iterator
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from django_bullq.checks import sqlite_concurrency_warning, sqlite_deferred_aliases
from django_bullq.conf import bullq_settings, get_queue
from django_bullq.core.clients import AUTHENTICATION_ERRORS, OUTAGE_ERRORS
from django_bullq.core.errors import InvalidNameError
from django_bullq.core.worker.outage import outages
from django_bullq.exceptions import ConfigurationError
from django_bullq.producer.schedules import upsert_declared
from django_bullq.worker.banner import banner
from django_bullq.worker.burst import (
    TALLY_ENV,
    Tally,
    read_tallies,
    summary,
    tally_of,
    write_tally,
)
from django_bullq.worker.group import WorkerGroup, run_workers
from django_bullq.worker.hygiene import in_flight
from django_bullq.worker.preflight import preflight
from django_bullq.worker.recycle import Recycler
from django_bullq.worker.supervisor import RECYCLE_EXIT, run_processes

logger = logging.getLogger("django_bullq.worker")


class Command(BaseCommand):
    help = (
        "Process django_bullq jobs of the named queues (default: BULLQ['DEFAULT_QUEUE']). "
        "SIGTERM/SIGINT: stop fetching and let active jobs finish within the grace period; "
        "a second signal stops at once."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "queues",
            nargs="*",
            metavar="queue",
            help="queue names; one worker per queue on one event loop",
        )
        parser.add_argument(
            "--concurrency",
            type=int,
            default=None,
            help="jobs run at once per queue (default BULLQ['WORKER'])",
        )
        parser.add_argument(
            "--burst", action="store_true", help="exit 0 once the queues hold no runnable job"
        )
        parser.add_argument(
            "--name",
            default=None,
            help="worker name, shown by BullMQ dashboards and the admin "
            "(BullMQ `name`; default <host>-<pid>)",
        )
        parser.add_argument(
            "--grace-period",
            type=float,
            default=None,
            dest="grace_period",
            help="seconds active jobs get after the first stop signal",
        )
        parser.add_argument(
            "--processes",
            type=int,
            default=1,
            help="worker processes to run (for CPU-bound tasks); each one "
            "runs every named queue with --concurrency slots; a process "
            "that dies is replaced",
        )
        parser.add_argument(
            "--max-jobs",
            type=int,
            default=None,
            dest="max_jobs",
            help="recycle a worker process after this many jobs (it stops "
            "cleanly and a fresh one replaces it)",
        )
        parser.add_argument(
            "--max-memory",
            type=float,
            default=None,
            dest="max_memory",
            help="recycle a worker process whose RSS reaches this many MB after a job",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        self._verbosity = int(options["verbosity"])
        self._configure_logging(int(options["verbosity"]))
        names = list(options["queues"]) or [bullq_settings.DEFAULT_QUEUE]
        if not options["name"]:  # dashboards (and the admin's Workers table) tell them apart
            options["name"] = f"{socket.gethostname()}-{os.getpid()}"
        self._check(options)
        recycler = Recycler(options["max_jobs"], options["max_memory"])
        supervised = os.environ.get("BULLQ_SUPERVISED") == "1"
        if not supervised:  # a supervised child: its supervisor said all this already
            self._start(names, options)
        if options["processes"] > 1 or (recycler.enabled and not supervised):
            self._supervise(names, options)
            return
        logger.info(
            "runworker: queues %s%s", ", ".join(names), " (burst)" if options["burst"] else ""
        )
        # only a --burst run gives up on Redis here; a long-running worker keeps retrying
        with self._command_errors(names, burst=options["burst"], wait=False):
            upsert_declared()  # BULLQ["SCHEDULERS"] (docs/schedulers.md)
            group = run_workers(
                names,
                grace_period_s=options["grace_period"],
                recycler=recycler,
                **_worker_shape(options),
            )
        self._exit(group, names, recycler)
        if options["burst"]:
            self._burst_summary(names, tally_of(group.workers))

    def _supervise(self, names: list[str], options: dict[str, Any]) -> None:
        """Run the worker processes (``--processes``, or recycling) until they all stopped;
        a --burst run then says one summary for all of them.

        Raises:
            SystemExit: the highest exit code of the children, when not 0.
        """
        with tempfile.TemporaryDirectory(prefix="bullq-burst-") as tally_dir:
            code = run_processes(
                options["processes"],
                self._child_args(names, options),
                name=options["name"],
                env={TALLY_ENV: tally_dir} if options["burst"] else None,
            )
            if code:
                raise SystemExit(code)
            if options["burst"]:
                self._burst_summary(names, read_tallies(tally_dir), options["processes"])

    def _start(self, names: list[str], options: dict[str, Any]) -> None:
        """The start banner, the checks that need Redis, and their warnings (stderr).

        Raises:
            CommandError: bad settings or queue name, a database index the server lacks, or
                (``--burst`` only) an unreachable Redis.
        """
        with self._command_errors(names, burst=options["burst"], wait=True):
            lines = banner(names, processes=options["processes"], **_worker_shape(options))
            if options["verbosity"] >= 1:
                self.stdout.write("\n".join(lines))
            concurrency = options["concurrency"]
            aliases = sqlite_deferred_aliases()
            if concurrency is not None and concurrency > 1 and aliases:
                warning = sqlite_concurrency_warning(concurrency, aliases)
                self.stderr.write(self.style.WARNING(f"Warning: {warning.msg} {warning.hint}"))
            for text in preflight(names):
                self.stderr.write(self.style.WARNING(f"Warning: {text}"))

    @contextlib.contextmanager
    def _command_errors(self, names: list[str], *, burst: bool, wait: bool) -> Iterator[None]:
        """Bad settings or names as a :class:`CommandError`, and so are credentials Redis
        refuses; so is an unreachable Redis, unless ``wait`` and not ``burst``: then the
        outage is logged once and the worker waits (it logs "reconnected" once Redis is up)."""
        try:
            yield
        except (ConfigurationError, InvalidNameError) as exc:
            raise CommandError(str(exc)) from exc
        except AUTHENTICATION_ERRORS as exc:  # a setting to fix: waiting would not help
            address = get_queue(names[0]).connection.address()
            raise CommandError(
                f"Redis at {address} refused the credentials of BULLQ['CONNECTIONS'] "
                f"({type(exc).__name__}: {exc}); fix the password or ACL user"
            ) from exc
        except OUTAGE_ERRORS as exc:
            if burst or not wait:
                raise CommandError(self._unreachable(names, exc, burst=burst)) from exc
            outages.failed(get_queue(names[0]).connection.address(), exc)

    @staticmethod
    def _unreachable(names: list[str], exc: BaseException, *, burst: bool) -> str:
        address = get_queue(names[0]).connection.address()
        then = "; --burst gives up" if burst else ""
        return f"Redis at {address} unreachable ({type(exc).__name__}: {exc}){then}"

    def _burst_summary(self, names: list[str], tally: Tally, processes: int = 1) -> None:
        """End a --burst run by saying what it did and what is left for later
        (:func:`~django_bullq.worker.burst.summary`); a supervised child writes its tally for
        the supervisor instead, which says it once for all its processes."""
        tally_dir = os.environ.get(TALLY_ENV)
        if processes == 1 and tally_dir and os.environ.get("BULLQ_SUPERVISED") == "1":
            write_tally(tally_dir, tally)
            return
        text = summary(names, tally, processes, _outbox_rows_left())
        if text is not None and self._verbosity >= 1:
            self.stdout.write(text)

    @staticmethod
    def _check(options: dict[str, Any]) -> None:
        """Refuse out-of-range flags (CommandError names the flag)."""
        if options["concurrency"] is not None and options["concurrency"] < 1:
            raise CommandError("--concurrency must be >= 1")
        if options["grace_period"] is not None and options["grace_period"] < 0:
            raise CommandError("--grace-period must be >= 0 s")
        if options["processes"] < 1:
            raise CommandError("--processes must be >= 1")
        for flag in ("max_jobs", "max_memory"):
            if options[flag] is not None and options[flag] <= 0:
                raise CommandError(f"--{flag.replace('_', '-')} must be > 0")

    @staticmethod
    def _exit(group: WorkerGroup, names: list[str], recycler: Recycler) -> None:
        """Log the run's totals and exit as the stop requires (abandoned threads, a forced
        stop, a recycle)."""
        processed = sum(w.processed for w in group.workers)
        failed = sum(w.failed for w in group.workers)
        logger.info("runworker: stopped (%d completed, %d failed)", processed, failed)
        abandoned = in_flight(names)  # this run's queues only: never another caller's threads
        if abandoned:
            # Their jobs were handed back to wait; the threads still run user code that no
            # longer owns the job. Exit now instead of waiting for them.
            logger.warning("runworker: abandoning %d job thread(s) still running", abandoned)
            logging.shutdown()
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(1 if group.forced else 0)
        if group.forced:
            raise SystemExit(1)
        if recycler.reason is not None:
            raise SystemExit(RECYCLE_EXIT)  # the supervisor starts a fresh process

    @staticmethod
    def _child_args(names: list[str], options: dict[str, Any]) -> list[str]:
        # the supervisor ran the system checks: its children do not print them again
        args = [*names, "--verbosity", str(options["verbosity"]), "--skip-checks"]
        for flag in ("concurrency", "grace_period", "max_jobs", "max_memory"):
            if options[flag] is not None:
                args += [f"--{flag.replace('_', '-')}", str(options[flag])]
        if options["burst"]:
            args.append("--burst")
        return args

    @staticmethod
    def _configure_logging(verbosity: int) -> None:
        """Log to stderr unless logging is configured (LOGGING, a root handler); ``-v 2``
        lowers the package logger to DEBUG either way (one line per job)."""
        package_logger = logging.getLogger("django_bullq")
        if package_logger.hasHandlers():
            if verbosity >= 2 and package_logger.getEffectiveLevel() > logging.DEBUG:
                package_logger.setLevel(logging.DEBUG)
            return
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        package_logger.addHandler(handler)
        levels = {0: logging.WARNING, 1: logging.INFO}
        package_logger.setLevel(levels.get(verbosity, logging.DEBUG))


def _worker_shape(options: dict[str, Any]) -> dict[str, Any]:
    """The options the banner shows and the worker group runs with, spelled once."""
    return {key: options[key] for key in ("burst", "concurrency", "name")}


def _outbox_rows_left() -> int:
    """With ``BULLQ["OUTBOX"]["ENABLED"]``, the outbox rows a burst run left unrelayed."""
    if not bullq_settings.OUTBOX["ENABLED"]:
        return 0
    from django_bullq.producer.relay import rows_left

    return rows_left()
