"""The public import path of the task API (``from django_bullq.tasks import current_job``).

The code lives where the data path puts it: the decorator in :mod:`django_bullq.producer.task`,
the registry in :mod:`django_bullq.producer.registry`, and what a running task calls
(:func:`~django_bullq.worker.dispatch.current_job`,
:func:`~django_bullq.worker.dispatch.rate_limit`) with the dispatcher in
:mod:`django_bullq.worker.dispatch`. This module only re-exports them, under the path the docs
give.
"""

from .exceptions import TaskRegistryError
from .producer.pending import PendingEnqueue
from .producer.registry import TaskRegistry, registry
from .producer.task import Task, task
from .worker.dispatch import arate_limit, current_job, process_job, rate_limit

__all__ = [
    "PendingEnqueue",
    "Task",
    "TaskRegistry",
    "TaskRegistryError",
    "arate_limit",
    "current_job",
    "process_job",
    "rate_limit",
    "registry",
    "task",
]
