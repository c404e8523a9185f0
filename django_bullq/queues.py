"""The queues of a project: those it declares and those found in its Redis.

:func:`declared_queue_names` reads the project alone (its tasks, ``BULLQ["DEFAULT_QUEUE"]``,
``BULLQ["QUEUES"]``, ``BULLQ["SCHEDULERS"]`` and the ``QUEUES`` of a ``TASKS`` backend on
django_bullq); :func:`known_queue_names` adds the queues found in the default connection's
Redis (:func:`~django_bullq.core.queue.discovery.found_queue_names`), which is what the admin's
overview and the Prometheus exposition list. ``runworker``'s preflight and banner use the
declared ones.
"""

from __future__ import annotations

import contextlib

from .conf import bullq_settings, get_queue
from .core.errors import InvalidNameError
from .core.queue import Queue, discovery
from .producer.registry import registry


def tasks_by_queue() -> dict[str, list[str]]:
    """Registered task names per queue name (a task without ``queue=`` is on
    ``BULLQ["DEFAULT_QUEUE"]``), in the registry's order."""
    found: dict[str, list[str]] = {}
    for name in registry.names():
        task = registry.get(name)
        if task is not None:
            found.setdefault(task.queue_name or bullq_settings.DEFAULT_QUEUE, []).append(name)
    return found


def django_tasks_backends() -> list[str]:
    """Aliases of ``settings.TASKS`` whose backend is django_bullq's, sorted."""
    from django.conf import settings

    return sorted(
        alias
        for alias, backend in getattr(settings, "TASKS", {}).items()
        if isinstance(backend, dict) and "django_bullq" in str(backend.get("BACKEND", ""))
    )


def declared_queue_names() -> set[str]:
    """Every queue name the project mentions: its tasks' queues, ``DEFAULT_QUEUE``, the keys
    of ``BULLQ["QUEUES"]``, the queues of ``BULLQ["SCHEDULERS"]`` and the ``QUEUES`` of a
    ``TASKS`` backend on django_bullq (no Redis call)."""
    from django.conf import settings

    names = {bullq_settings.DEFAULT_QUEUE, *bullq_settings.QUEUES, *tasks_by_queue()}
    for entry in bullq_settings.SCHEDULERS.values():
        if isinstance(entry, dict) and isinstance(entry.get("queue"), str):
            names.add(entry["queue"])
    for alias in django_tasks_backends():
        queues = settings.TASKS[alias].get("QUEUES") or []
        names.update(q for q in queues if isinstance(q, str))
    return names


def known_queue_names() -> list[str]:
    """:func:`declared_queue_names` and the queues found in the default connection's Redis
    (a SCAN of ``<prefix>:*:meta`` walking a bounded number of keys per call), sorted; empty
    names are skipped. With Redis unreachable, the declared ones."""
    names = declared_queue_names()
    # discovery is a nice-to-have: with Redis down the settings still list the queues
    with contextlib.suppress(Exception):
        names |= discovery.found_queue_names(get_queue(bullq_settings.DEFAULT_QUEUE))
    return sorted(n for n in names if n)


def queue_or_none(name: str) -> Queue | None:
    """The configured queue ``name`` (:func:`~django_bullq.conf.get_queue`), or None when the
    name breaks the queue name rule (a name found in Redis may)."""
    try:
        return get_queue(name)
    except InvalidNameError:
        return None


__all__ = [
    "declared_queue_names",
    "django_tasks_backends",
    "known_queue_names",
    "queue_or_none",
    "tasks_by_queue",
]
