"""The worker: BullMQ's ``Worker`` for one queue and its settings.

``from django_bullq.core.worker import Worker, WorkerOptions`` is the import path; each module
of this package holds one concept of the worker (docs/code-layout.md).
"""

from __future__ import annotations

from .options import Dispatcher, Route
from .worker import JobHook, Processor, SerializationError, Worker, WorkerOptions

__all__ = [
    "Dispatcher",
    "JobHook",
    "Processor",
    "Route",
    "SerializationError",
    "Worker",
    "WorkerOptions",
]
