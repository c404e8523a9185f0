"""The text exposition of every known queue: what the view serves and ``manage.py bullq
metrics`` prints (docs/observability.md).

The queues are the admin's (:func:`~django_bullq.queues.known_queue_names`): those the
project declares (settings, tasks, schedulers, ``django.tasks`` backends) and those found in
Redis by a bounded ``SCAN``. Each scrape reads Redis afresh; nothing is kept between scrapes.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder

from ..conf import get_config
from ..core.queue import Queue
from ..queues import known_queue_names, queue_or_none
from .collector import BullqCollector


def known_queues() -> Iterator[Queue]:
    """The configured :class:`~django_bullq.core.queue.queue.Queue` of every known queue name."""
    for name in known_queue_names():
        queue = queue_or_none(name)
        if queue is not None:
            yield queue


def collector() -> BullqCollector:
    """A collector over :func:`known_queues` with ``BULLQ["PROMETHEUS"]["MAX_TASKS"]``."""
    return BullqCollector(known_queues, max_tasks=int(get_config()["PROMETHEUS"]["MAX_TASKS"]))


def exposition(accept: str = "") -> tuple[bytes, str]:
    """One scrape of every known queue, and its content type.

    Args:
        accept: the scraper's ``Accept`` header: OpenMetrics when it asks for it, otherwise
            Prometheus's text format (``text/plain; version=...``; ``prometheus_client``
            chooses, as its own ``/metrics`` handler does).

    Returns:
        ``(body, content type)``. A queue whose Redis cannot be read is reported
        ``bullq_queue_up{queue="..."} 0``.
    """
    registry = CollectorRegistry()
    registry.register(collector())
    encoder, content_type = choose_encoder(accept)
    return encoder(registry), content_type
