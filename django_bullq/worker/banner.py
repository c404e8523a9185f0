"""What ``manage.py runworker`` tells a person as it starts (:func:`banner`).

Redis without its password, queues, concurrency, processes, event loop, the tasks each
queue can run, and the queues with tasks that this run does not serve. What it checks before
the workers start: :mod:`.preflight`.
"""

from __future__ import annotations

from collections.abc import Sequence

from .. import __version__
from ..conf import get_queue, worker_options
from ..core.eventloop import loop_factory
from ..queues import django_tasks_backends, tasks_by_queue


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
    others = sorted(set(tasks) - set(names))
    if others:  # a worker started on the wrong queue says where the project's tasks are
        counts = (f"{q} ({len(tasks[q])} task{'' if len(tasks[q]) == 1 else 's'})" for q in others)
        lines.append(f"    not run here: {', '.join(counts)}")
    backends = django_tasks_backends()
    if backends:
        lines.append(
            f"    and django.tasks tasks of backend(s) {', '.join(backends)}, by import path"
        )
    return lines
