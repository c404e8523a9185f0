"""What ``manage.py runworker`` checks before its workers start.

:func:`preflight` reaches every Redis of the run once before the workers start: a database
index the server does not have becomes a :class:`~django_bullq.exceptions.ConfigurationError`
that says so, and a queue name that no task, scheduler or setting knows and that holds no job
(a typo such as ``defualt``) becomes a warning naming the close matches.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from ..conf import get_queue
from ..core.clients import RESPONSE_ERRORS
from ..exceptions import ConfigurationError
from ..queues import declared_queue_names, tasks_by_queue


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
    known = declared_queue_names()
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
