"""Django's tasks framework, from where it lives: ``django.tasks`` (Django >= 6.0) or the
``django-tasks`` backport on Django 5.2 (``pip install django-bullq[django52]``).

Only the names the backend and its worker use; they have the same meaning in both.

Raises (at import):
    ImportError: Django 5.2 without the ``django-tasks`` package.
"""

from __future__ import annotations

try:
    from django.tasks import Task, TaskContext, TaskResult, TaskResultStatus, task_backends
    from django.tasks.backends.base import BaseTaskBackend
    from django.tasks.base import (
        TASK_MAX_PRIORITY,
        TASK_MIN_PRIORITY,
        TaskError,
    )
    from django.tasks.exceptions import InvalidTask, TaskResultDoesNotExist
    from django.tasks.signals import task_enqueued, task_finished, task_started
    from django.utils.json import normalize_json
except ImportError:  # Django 5.2: the backport
    from django_tasks import (  # type: ignore[no-redef]
        TaskContext,
        TaskResult,
        TaskResultStatus,
        task_backends,
    )
    from django_tasks.backends.base import BaseTaskBackend  # type: ignore[no-redef]
    from django_tasks.base import (  # type: ignore[no-redef]
        TASK_MAX_PRIORITY,
        TASK_MIN_PRIORITY,
        Task,
        TaskError,
    )
    from django_tasks.exceptions import (  # type: ignore[no-redef]
        InvalidTaskError as InvalidTask,
    )
    from django_tasks.exceptions import TaskResultDoesNotExist  # type: ignore[no-redef]
    from django_tasks.signals import (  # type: ignore[no-redef]
        task_enqueued,
        task_finished,
        task_started,
    )
    from django_tasks.utils import normalize_json  # type: ignore[no-redef]

__all__ = [
    "TASK_MAX_PRIORITY",
    "TASK_MIN_PRIORITY",
    "BaseTaskBackend",
    "InvalidTask",
    "Task",
    "TaskContext",
    "TaskError",
    "TaskResult",
    "TaskResultDoesNotExist",
    "TaskResultStatus",
    "normalize_json",
    "task_backends",
    "task_enqueued",
    "task_finished",
    "task_started",
]
