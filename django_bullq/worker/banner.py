"""What ``manage.py runworker`` tells a person as it starts, and what it checks first.

:func:`banner` is the start banner (Redis without its password, queues, concurrency,
processes, event loop and the tasks each queue can run). :func:`preflight` reaches every
Redis of the run once before the workers start: a database index the server does not have
becomes a :class:`~django_bullq.exceptions.ConfigurationError` that says so, and a queue name
that no task, scheduler or setting knows and that holds no job (a typo such as ``defualt``)
becomes a warning naming the close matches.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence

import redis

from .. import __version__
from ..conf import bullq_settings, get_queue, worker_options
from ..core.eventloop import loop_factory
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


def event_loop_name(choice: str) -> str:
    """``"uvloop"`` or ``"asyncio"``: the loop ``choice`` (``EVENT_LOOP``) runs on here."""
    try:
        return "asyncio" if loop_factory(choice) is None else "uvloop"
    except (ValueError, ImportError) as exc:
        return f"unusable ({exc})"


def banner(
    names: Sequence[str], *, concurrency: int | None, processes: int, burst: bool, name: str
) -> list[str]:
    """The start banner's lines.

    Args:
        names: the queues of this run. concurrency: ``--concurrency`` (None: the setting).
        processes: ``--processes``. burst: ``--burst``. name: the worker name.

    Raises:
        ConfigurationError: bad settings. InvalidNameError: bad queue name.
    """
    opts = worker_options(concurrency=concurrency)
    redis_of: dict[str, list[str]] = {}
    for queue_name in names:
        redis_of.setdefault(get_queue(queue_name).connection.describe(), []).append(queue_name)
    if len(redis_of) == 1:
        where = next(iter(redis_of))
    else:
        where = "; ".join(f"{url} ({', '.join(queues)})" for url, queues in redis_of.items())
    tasks = tasks_by_queue()
    per_process = "process" if processes == 1 else "processes"
    lines = [
        f"django_bullq {__version__} runworker {name}{' (burst)' if burst else ''}",
        f"  Redis:       {where}",
        f"  queues:      {', '.join(names)}",
        f"  concurrency: {opts.concurrency} per queue, {processes} {per_process}",
        f"  event loop:  {event_loop_name(opts.event_loop)}",
        "  tasks:",
    ]
    for queue_name in names:
        listed = tasks.get(queue_name, [])
        lines.append(f"    {queue_name}: {', '.join(listed) if listed else '(none registered)'}")
    backends = django_tasks_backends()
    if backends:
        lines.append(
            f"    and django.tasks tasks of backend(s) {', '.join(backends)}, by import path"
        )
    return lines


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
        except redis.ResponseError as exc:
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
