"""``manage.py bullq <subcommand>``: operational commands, one module per subcommand.

Subcommands are listed in :data:`SUBCOMMANDS` (name -> module). Each module defines
``HELP`` (one line), ``add_arguments(parser)`` and ``handle(command, **options) -> int``
(the exit code), so a new subcommand is a new module and one line here.
"""

from __future__ import annotations

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


class Command(BaseCommand):
    help = "django_bullq operations: " + ", ".join(sorted(SUBCOMMANDS))
    requires_system_checks = ()  # a probe must answer even when a check would fail

    def add_arguments(self, parser: CommandParser) -> None:
        subparsers = parser.add_subparsers(dest="subcommand", required=True, metavar="subcommand")
        for name in sorted(SUBCOMMANDS):
            module = _module(name)
            module.add_arguments(
                subparsers.add_parser(name, help=module.HELP, description=module.HELP)
            )

    def handle(self, *args: Any, **options: Any) -> None:
        code = _module(options.pop("subcommand")).handle(self, **options)
        if code:
            raise SystemExit(code)
