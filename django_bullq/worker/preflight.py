"""What ``manage.py runworker`` checks before its workers start, and the queues a project
declares (its tasks, settings, schedulers and ``django.tasks`` backends).

:func:`preflight` reaches every Redis of the run once before the workers start: a database
index the server does not have becomes a :class:`~django_bullq.exceptions.ConfigurationError`
that says so, and a queue name that no task, scheduler or setting knows and that holds no job
(a typo such as ``defualt``) becomes a warning naming the close matches.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from ..conf import bullq_settings, get_queue
from ..core.clients import RESPONSE_ERRORS
from ..exceptions import ConfigurationError
from ..producer.registry import registry


def tasks_by_queue() -> dict[str, list[str]]:
    """Registered task names per queue name (a task without ``queue=`` is on
    ``BULLQ["DEFAULT_QUEUE"]``), each list sorted."""
    found: dict[str, list[str]] = {}
    for name in registry.names():
        task = registry.get(name)
        if task is not None:
            found.setdefault(task.queue_name or bullq_settings.DEFAULT_QUEUE, []).append(name)
    return found


def known_queue_names() -> set[str]:
    """Every queue name the project mentions: its tasks' queues, ``DEFAULT_QUEUE``, the keys
    of ``BULLQ["QUEUES"]``, the queues of ``BULLQ["SCHEDULERS"]`` and the ``QUEUES`` of a
    ``TASKS`` backend on django_bullq."""
    from django.conf import settings

    names = {bullq_settings.DEFAULT_QUEUE, *bullq_settings.QUEUES, *tasks_by_queue()}
    for entry in bullq_settings.SCHEDULERS.values():
        if isinstance(entry, dict) and isinstance(entry.get("queue"), str):
            names.add(entry["queue"])
    for alias in django_tasks_backends():
        queues = settings.TASKS[alias].get("QUEUES") or []
        names.update(q for q in queues if isinstance(q, str))
    return names


def django_tasks_backends() -> list[str]:
    """Aliases of ``settings.TASKS`` whose backend is django_bullq's, sorted."""
    from django.conf import settings

    return sorted(
        alias
        for alias, backend in getattr(settings, "TASKS", {}).items()
        if isinstance(backend, dict) and "django_bullq" in str(backend.get("BACKEND", ""))
    )


def preflight(names: Sequence[str]) -> list[str]:
    """Reach each Redis of the run once and look for queue names that are likely typos.

    Returns:
        Warnings to show (one per queue that no task, setting or scheduler names and that
        holds no job, with close matches of the known queue names).

    Raises:
        ConfigurationError: the URL's database index does not exist on the server.
        redis.ConnectionError / redis.TimeoutError: Redis could not be reached.
    """
    tasks = tasks_by_queue()
    known = known_queue_names()
    warnings: list[str] = []
    for queue_name in names:
        queue = get_queue(queue_name)
        try:
            counts = queue.get_job_counts()
        except RESPONSE_ERRORS as exc:
            error = queue.connection.database_error(exc)
            if error is None:
                raise
            raise ConfigurationError(str(error)) from exc
        if queue_name in known or queue_name in tasks or any(counts.values()):
            continue
        close = difflib.get_close_matches(queue_name, sorted(known - {queue_name}), n=3)
        hint = f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        warnings.append(
            f"queue {queue_name!r} has no registered task and holds no job: no task of this "
            f"project sends jobs there.{hint} Known queues: {', '.join(sorted(known))}."
        )
    return warnings
