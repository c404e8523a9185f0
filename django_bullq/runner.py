"""The former path of the Django worker group, kept for scripts that import
``django_bullq.runner.run_workers`` or ``build_worker``.

The code lives in :mod:`django_bullq.worker.group` (the group),
:mod:`django_bullq.worker.hygiene` (the per-job database hooks) and
:mod:`django_bullq.worker.supervisor` (``run_processes``); this module only re-exports it.
"""

from .worker.group import WorkerGroup, arun_group, build_worker, run_workers
from .worker.hygiene import after_job, before_job, discard_leaked_transaction, in_flight
from .worker.supervisor import run_processes

__all__ = [
    "WorkerGroup",
    "after_job",
    "arun_group",
    "before_job",
    "build_worker",
    "discard_leaked_transaction",
    "in_flight",
    "run_processes",
    "run_workers",
]
