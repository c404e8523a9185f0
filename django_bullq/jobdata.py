"""The Django layer's job format: what ``@task`` and the ``django.tasks`` backend write and
what the worker's dispatcher reads.

* job name: the function's import path (or the ``name=`` given to ``@task``);
* job data: ``{"args": [...], "kwargs": {...}}`` (strict JSON), except for ``raw=True`` tasks;
* ``opts[DJANGO_TASK_OPTION]``: set on jobs of Django's tasks framework.

Both the dispatcher (``django_bullq.worker.dispatch``) and the backend's run
(``django_bullq.backends.run``) read the data with :func:`split_call`, so it lives here, in
neither.
"""

from __future__ import annotations

import inspect
from typing import Any

from .core.errors import UnrecoverableError

#: ``opts`` key marking a job of Django's tasks framework (``django_bullq.backends``).
DJANGO_TASK_OPTION = "djangoTask"


def split_call(
    name: str, data: Any, signature: inspect.Signature, leading: tuple[Any, ...] = ()
) -> tuple[list[Any], dict[str, Any]]:
    """``{"args": [...], "kwargs": {...}}`` job data as a call checked against ``signature``.

    Args:
        name: task name (for messages).
        data: the job's data.
        signature: the function's signature.
        leading: arguments passed before the job's ``args`` (a Django task's context).

    Raises:
        UnrecoverableError: another shape, or a call the signature does not accept.
    """
    if not isinstance(data, dict) or set(data) - {"args", "kwargs"}:
        shape = type(data).__name__ if not isinstance(data, dict) else f"keys {sorted(data)}"
        raise UnrecoverableError(
            f'job data for task {name!r} must be {{"args": [...], "kwargs": {{...}}}}, '
            f"got {shape} (bind raw producers with @task(name=..., raw=True))"
        )
    args, kwargs = data.get("args", []), data.get("kwargs", {})
    if not isinstance(args, list) or not isinstance(kwargs, dict):
        raise UnrecoverableError(
            f"job data for task {name!r}: 'args' must be a list and 'kwargs' an object"
        )
    try:
        signature.bind(*leading, *args, **kwargs)
    except TypeError as exc:
        raise UnrecoverableError(
            f"job data does not match the signature of task {name!r}: {exc}"
        ) from exc
    return args, kwargs


__all__ = ["DJANGO_TASK_OPTION", "split_call"]
