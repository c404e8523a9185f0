"""django_bullq: BullMQ for Django. A Redis job queue sharing BullMQ's data layout.

Public names: :class:`Queue`, :class:`Job`, :class:`Worker`, :class:`JobOptions`,
:class:`Connection`, :func:`task` (its :class:`Task`, :class:`BoundCall`), flows
(:class:`FlowProducer`, :func:`chain`) and the errors in :mod:`django_bullq.core.errors`.
"""

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = [
    "BoundCall",
    "Connection",
    "FlowProducer",
    "Job",
    "JobOptions",
    "Queue",
    "Task",
    "UnrecoverableError",
    "WaitingChildrenError",
    "Worker",
    "chain",
    "task",
]

from .core.connection import Connection
from .core.errors import UnrecoverableError, WaitingChildrenError
from .core.flow import FlowProducer, chain  # flows (docs/flows.md)
from .core.job import Job
from .core.options import JobOptions
from .core.queue import Queue
from .core.worker import Worker

if TYPE_CHECKING:
    from .producer.pending import BoundCall
    from .producer.task import Task, task
else:

    def __getattr__(name: str) -> Any:
        # The Django layer is imported lazily so the core stays usable without settings.
        if name in ("task", "Task", "BoundCall"):
            from .producer import task as task_module

            return getattr(task_module, name)
        raise AttributeError(name)
