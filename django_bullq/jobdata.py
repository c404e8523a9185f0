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


_CALL_KEYS = frozenset({"args", "kwargs"})
#: call shapes a :class:`CallChecker` remembers at most (a producer varying keyword names
#: per job must not grow it without bound)
MAX_REMEMBERED_SHAPES = 256


class CallChecker:
    """Splits ``{"args": [...], "kwargs": {...}}`` job data into a call checked against one
    signature, remembering the call shapes that bound.

    Whether ``signature.bind`` accepts a call depends only on its shape (the number of
    positional arguments and the keyword names), never on the values; so each shape is bound
    once, and later jobs of that shape skip the bind.

    Args:
        name: task name (for messages).
        signature: the function's signature.
    """

    __slots__ = ("_name", "_signature", "_shapes")

    def __init__(self, name: str, signature: inspect.Signature) -> None:
        self._name = name
        self._signature = signature
        self._shapes: set[tuple[Any, ...]] = set()

    def split(self, data: Any, leading: tuple[Any, ...] = ()) -> tuple[list[Any], dict[str, Any]]:
        """The positional and keyword arguments of ``data``.

        Args:
            data: the job's data.
            leading: arguments passed before the job's ``args`` (a Django task's context).

        Returns:
            ``(args, kwargs)``: the job's lists, not copies.

        Raises:
            UnrecoverableError: another shape, or a call the signature does not accept.
        """
        name = self._name
        if not isinstance(data, dict) or not _CALL_KEYS.issuperset(data):
            got = type(data).__name__ if not isinstance(data, dict) else f"keys {sorted(data)}"
            raise UnrecoverableError(
                f'job data for task {name!r} must be {{"args": [...], "kwargs": {{...}}}}, '
                f"got {got} (bind raw producers with @task(name=..., raw=True))"
            )
        args, kwargs = data.get("args", []), data.get("kwargs", {})
        if not isinstance(args, list) or not isinstance(kwargs, dict):
            raise UnrecoverableError(
                f"job data for task {name!r}: 'args' must be a list and 'kwargs' an object"
            )
        shape = (len(leading) + len(args), *kwargs)
        if shape not in self._shapes:
            try:
                self._signature.bind(*leading, *args, **kwargs)
            except TypeError as exc:
                raise UnrecoverableError(
                    f"job data does not match the signature of task {name!r}: {exc}"
                ) from exc
            if len(self._shapes) < MAX_REMEMBERED_SHAPES:
                self._shapes.add(shape)
        return args, kwargs


def split_call(
    name: str, data: Any, signature: inspect.Signature, leading: tuple[Any, ...] = ()
) -> tuple[list[Any], dict[str, Any]]:
    """``{"args": [...], "kwargs": {...}}`` job data as a call checked against ``signature``
    (one :meth:`CallChecker.split`; keep a :class:`CallChecker` to check many jobs).

    Args:
        name: task name (for messages).
        data: the job's data.
        signature: the function's signature.
        leading: arguments passed before the job's ``args`` (a Django task's context).

    Raises:
        UnrecoverableError: another shape, or a call the signature does not accept.
    """
    return CallChecker(name, signature).split(data, leading)


__all__ = ["DJANGO_TASK_OPTION", "MAX_REMEMBERED_SHAPES", "CallChecker", "split_call"]
