"""System checks over ``settings.BULLQ`` and the ``runworker`` command (ids in docs/checks.md).

The checks never connect to Redis: they validate shapes, names and references only. One
module per subject, as Django's own ``django.core.checks``: :mod:`.settings` (E001-E009),
:mod:`.runworker` (W001), :mod:`.sqlite` (W002), :mod:`.schedulers` (E010),
:mod:`.prometheus` (W003, W004), :mod:`.telemetry` (E012), :mod:`.clients` (E013, W005).

:mod:`.clients` imports the client classes and factories ``CONNECTIONS`` names (it never
builds a client).
"""

from __future__ import annotations

from collections.abc import Callable

from django.core.checks import CheckMessage

from .clients import check_clients
from .prometheus import check_prometheus
from .runworker import (
    FOREIGN_RUNWORKER_ENV,
    check_runworker_command,
    foreign_runworker_message,
    refuse_foreign_runworker,
    runworker_owner,
)
from .schedulers import check_schedulers
from .settings import (
    TAG,
    URL_SCHEMES,
    check_connections,
    check_default_queue,
    check_queues,
    check_settings_shape,
    check_task_queues,
)
from .sqlite import check_sqlite_concurrency, sqlite_concurrency_warning, sqlite_deferred_aliases
from .telemetry import check_telemetry

#: Every check, in the order they are registered.
ALL_CHECKS: tuple[Callable[..., list[CheckMessage]], ...] = (
    check_settings_shape,
    check_connections,
    check_clients,
    check_queues,
    check_default_queue,
    check_task_queues,
    check_runworker_command,
    check_schedulers,
    check_sqlite_concurrency,
    check_prometheus,
    check_telemetry,
)

__all__ = [
    "ALL_CHECKS",
    "FOREIGN_RUNWORKER_ENV",
    "TAG",
    "URL_SCHEMES",
    "check_clients",
    "check_connections",
    "check_default_queue",
    "check_prometheus",
    "check_queues",
    "check_runworker_command",
    "check_schedulers",
    "check_settings_shape",
    "check_sqlite_concurrency",
    "check_task_queues",
    "check_telemetry",
    "foreign_runworker_message",
    "refuse_foreign_runworker",
    "runworker_owner",
    "sqlite_concurrency_warning",
    "sqlite_deferred_aliases",
]
