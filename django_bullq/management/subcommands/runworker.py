"""``manage.py bullq runworker [queue ...]``: the worker under the ``bullq`` command.

The same command as ``manage.py runworker`` (same arguments, same exit codes), reachable when
another app listed above ``django_bullq`` in ``INSTALLED_APPS`` owns the name ``runworker``
(Channels ships one).
"""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand

HELP = "run workers for the named queues (the same as manage.py runworker)"


def add_arguments(parser: ArgumentParser) -> None:
    """``runworker``'s arguments (``-v``, ``--skip-checks`` and Django's other options come
    with every subcommand: ``manage.py bullq`` itself runs no checks)."""
    from django_bullq.management.commands.runworker import Command

    Command().add_arguments(parser)  # type: ignore[arg-type]


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
