"""``manage.py bullq <subcommand>``: operational commands, one module per subcommand.

Subcommands are listed in :data:`SUBCOMMANDS` (name -> module). Each module defines
``HELP`` (one line), ``add_arguments(parser)`` and ``handle(command, **options) -> int``
(the exit code), so a new subcommand is a new module and one line here.
"""

from __future__ import annotations

import argparse
import importlib
from types import ModuleType
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

SUBCOMMANDS = {
    "capacity": "django_bullq.management.subcommands.capacity",
    "health": "django_bullq.management.subcommands.health",
    "metrics": "django_bullq.management.subcommands.metrics",
    "runworker": "django_bullq.management.subcommands.runworker",
}


def _module(name: str) -> ModuleType:
    return importlib.import_module(SUBCOMMANDS[name])


def _django_options() -> CommandParser:
    """Django's options of every command (``--settings``, ``-v``, ...), for the subcommands'
    parsers: after a subcommand argparse reads only that subcommand's options. Their defaults
    are suppressed, so that they never undo what was given before the subcommand."""
    common = CommandParser(add_help=False)
    keep = argparse.SUPPRESS
    common.add_argument("-v", "--verbosity", type=int, choices=[0, 1, 2, 3], default=keep)
    for flag in ("--settings", "--pythonpath"):
        common.add_argument(flag, default=keep)
    for flag in ("--traceback", "--no-color", "--force-color"):
        common.add_argument(flag, action="store_true", default=keep)
    # `bullq` has no --skip-checks of its own (it runs no checks): a subcommand's
    common.add_argument("--skip-checks", action="store_true", help="skip the system checks")
    return common


class Command(BaseCommand):
    help = "django_bullq operations: " + ", ".join(sorted(SUBCOMMANDS))
    requires_system_checks = ()  # a probe must answer even when a check would fail

    def add_arguments(self, parser: CommandParser) -> None:
        subparsers = parser.add_subparsers(dest="subcommand", required=True, metavar="subcommand")
        common = _django_options()
        for name in sorted(SUBCOMMANDS):
            module = _module(name)
            module.add_arguments(
                subparsers.add_parser(
                    name, help=module.HELP, description=module.HELP, parents=[common]
                )
            )

    def handle(self, *args: Any, **options: Any) -> None:
        code = _module(options.pop("subcommand")).handle(self, **options)
        if code:
            raise SystemExit(code)
