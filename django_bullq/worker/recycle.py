"""Worker-process recycling for ``runworker --max-jobs N`` / ``--max-memory MB``.

A :class:`Recycler` counts jobs and reads the process's resident memory (RSS) after each job,
in the job's thread (a worker hook); at a limit it closes the worker group gracefully (no new
jobs, active ones finish) and ``runworker`` exits with
:data:`~django_bullq.worker.supervisor.RECYCLE_EXIT`, so that its supervisor starts a fresh process.
"""

from __future__ import annotations

import asyncio
import logging
import os
import resource
import threading
from collections.abc import Callable

from ..core.job import Job

logger = logging.getLogger("django_bullq.worker")


def rss_mb() -> float:
    """Resident memory of this process in MB (``/proc/self/statm``; peak RSS elsewhere)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            pages = int(statm.read().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE") / (1024 * 1024)
    except (OSError, ValueError, IndexError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class Recycler:
    """Decides when this worker process should be replaced.

    Args:
        max_jobs: jobs after which to recycle (None: no limit).
        max_memory_mb: RSS in MB at or above which to recycle after a job (None: no limit).

    Attributes:
        jobs: jobs seen. reason: why recycling was triggered (None until then).
    """

    def __init__(self, max_jobs: int | None = None, max_memory_mb: float | None = None) -> None:
        self.max_jobs = max_jobs
        self.max_memory_mb = max_memory_mb
        self.jobs = 0
        self.reason: str | None = None
        self._lock = threading.Lock()
        self._stop: Callable[[], None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def enabled(self) -> bool:
        return bool(self.max_jobs) or bool(self.max_memory_mb)

    def bind(self, loop: asyncio.AbstractEventLoop, stop: Callable[[], None]) -> None:
        """Call ``stop`` on ``loop`` when a limit is reached."""
        self._loop, self._stop = loop, stop

    def before_job(self, job: Job) -> None:
        """Worker hook (nothing to do before a job)."""

    def after_job(self, job: Job) -> None:
        """Worker hook, in the job's thread: count the job, check the limits."""
        with self._lock:
            self.jobs += 1
            if self.reason is not None:
                return
            if self.max_jobs and self.jobs >= self.max_jobs:
                self.reason = f"{self.jobs} jobs done (--max-jobs {self.max_jobs})"
            elif self.max_memory_mb:
                used = rss_mb()
                if used >= self.max_memory_mb:
                    self.reason = (
                        f"RSS {used:.0f} MB after job {job.id} "
                        f"(--max-memory {self.max_memory_mb:g})"
                    )
            if self.reason is None:
                return
        logger.info("worker process %d: recycling: %s", os.getpid(), self.reason)
        if self._loop is not None and self._stop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._stop)
