"""``manage.py bullq runworker [queue ...]``: the worker under the ``bullq`` command.

The same command as ``manage.py runworker`` (same arguments, same exit codes), reachable when
another app listed above ``django_bullq`` in ``INSTALLED_APPS`` owns the name ``runworker``
(Channels ships one).
"""

from __future__ import annotations

import argparse
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand

HELP = "run workers for the named queues (the same as manage.py runworker)"


def add_arguments(parser: ArgumentParser) -> None:
    """``runworker``'s arguments, plus ``-v`` and ``--skip-checks`` after the subcommand
    name (``manage.py bullq`` itself runs no checks)."""
    from django_bullq.management.commands.runworker import Command

    Command().add_arguments(parser)  # type: ignore[arg-type]
    parser.add_argument(
        "-v",
        "--verbosity",
        type=int,
        choices=[0, 1, 2, 3],
        default=argparse.SUPPRESS,  # keep `bullq -v 2 runworker` working too
        help="0 warnings only, 1 the banner and start/stop lines, 2 one line per job",
    )
    parser.add_argument("--skip-checks", action="store_true", help="skip the system checks")


def handle(command: BaseCommand, **options: Any) -> int:
    """Run the system checks, then ``runworker`` with ``options``; its SystemExit and
    CommandError pass through (``manage.py bullq`` runs no checks of its own)."""
    from django_bullq.management.commands.runworker import Command

    if not options.get("skip_checks"):
        command.check()
    worker = Command()
    worker.stdout, worker.stderr, worker.style = command.stdout, command.stderr, command.style
    worker.handle(**options)
    return 0
