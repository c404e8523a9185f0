"""``manage.py bullq metrics``: print the Prometheus text exposition of every known queue, the
same text the metrics view serves (docs/observability.md); for a look by hand, a cron job
writing a node_exporter textfile, or a scrape without the web server.
"""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

HELP = "print the Prometheus metrics of every known queue (text exposition format)"


def add_arguments(parser: ArgumentParser) -> None:
    """No options."""


def handle(command: BaseCommand, **options: Any) -> int:
    """Print the exposition; returns the exit code (0).

    Raises:
        CommandError: ``prometheus_client`` is not installed (the ``prometheus`` extra).
    """
    try:
        from django_bullq.prometheus.exposition import exposition
    except ImportError as exc:
        raise CommandError(
            f"{exc}: install the prometheus extra (pip install 'django-bullq[prometheus]')"
        ) from exc
    command.stdout.write(exposition()[0].decode(), ending="")
    return 0
