"""The task registry: job name -> :class:`~django_bullq.producer.task.Task`.

``@task`` fills it at import time; the worker's dispatcher (``django_bullq.worker.dispatch``)
looks each fetched job's name up here.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..exceptions import TaskRegistryError

if TYPE_CHECKING:
    from .task import Task


class TaskRegistry:
    """Job name -> :class:`Task`. The worker's dispatcher looks tasks up here."""

    def __init__(self) -> None:
        self._tasks: dict[str, Task[..., Any]] = {}
        self._lock = threading.Lock()

    def register(self, task: Task[..., Any]) -> None:
        """Add ``task`` under ``task.name``.

        Re-registering the same function (a module imported twice) replaces the entry.

        Raises:
            TaskRegistryError: another function is already registered under that name.
        """
        with self._lock:
            known = self._tasks.get(task.name)
            if known is not None and import_path(known.func) != import_path(task.func):
                raise TaskRegistryError(
                    f"job name {task.name!r} is already bound to {import_path(known.func)}; "
                    f"cannot bind it to {import_path(task.func)} too"
                )
            self._tasks[task.name] = task

    def unregister(self, name: str) -> None:
        """Forget the task named ``name`` (no error when absent)."""
        with self._lock:
            self._tasks.pop(name, None)

    def get(self, name: str) -> Task[..., Any] | None:
        """The task bound to job name ``name``, or None."""
        return self._tasks.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._tasks

    def names(self) -> list[str]:
        """Registered job names, sorted."""
        return sorted(self._tasks)


#: The process-wide registry filled by ``@task``.
registry = TaskRegistry()


def import_path(func: Callable[..., Any]) -> str:
    """``module.qualname`` of ``func``: the default job name of a task."""
    return f"{func.__module__}.{func.__qualname__}"


__all__ = ["TaskRegistry", "import_path", "registry"]
