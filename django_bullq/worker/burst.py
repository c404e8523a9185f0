"""What ``runworker --burst`` says at its end: the jobs it processed and the retries left.

A ``--burst --processes N`` run ends with one summary for all its processes: each child writes
its counts to a tally file in the directory :data:`TALLY_ENV` names, and the supervisor sums
them once every child has exited.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from ..conf import get_queue

#: Delayed jobs read to count the retries among them (the ones due first).
BURST_SAMPLE = 1000
#: Environment variable of a supervised ``--burst`` child: where it writes its tally.
TALLY_ENV = "BULLQ_BURST_TALLY"


def write_tally(directory: str, completed: int, failed: int) -> None:
    """Write this process's counts into ``directory`` (one file per process id)."""
    path = Path(directory) / f"{os.getpid()}.json"
    path.write_text(json.dumps({"completed": completed, "failed": failed}))


def read_tallies(directory: str) -> tuple[int, int]:
    """The ``(completed, failed)`` counts of every tally in ``directory``, summed (a tally
    that cannot be read counts 0: the child died before it wrote one)."""
    completed = failed = 0
    for path in Path(directory).glob("*.json"):
        try:
            tally = json.loads(path.read_text())
            completed += int(tally["completed"])
            failed += int(tally["failed"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return completed, failed


def summary(names: Sequence[str], completed: int, failed: int, processes: int = 1) -> str | None:
    """The closing line of a ``--burst`` run of queues ``names``: the jobs processed, and the
    jobs left delayed (retries waiting out their backoff, delayed jobs) that no worker ran.

    Returns:
        The line, or None when Redis cannot be reached to count what is left.
    """
    delayed = retries = 0
    for name in names:
        queue = get_queue(name)
        try:
            count = queue.get_job_counts("delayed")["delayed"]
            # a retry is a delayed job with an attempt made (the next ones due first)
            sample = queue.get_jobs("delayed", end=BURST_SAMPLE - 1, asc=True)
        except (RedisConnectionError, RedisTimeoutError, OSError):
            return None
        delayed += count
        retries += sum(1 for job in sample if job.attempts_made > 0)
    by = f" by {processes} processes" if processes > 1 else ""
    text = (
        f"runworker --burst: {completed + failed} job(s) processed{by} "
        f"({completed} completed, {failed} failed); {retries} retr"
        f"{'y' if retries == 1 else 'ies'} still delayed"
    )
    if delayed > BURST_SAMPLE:
        text += f" among the first {BURST_SAMPLE}"
    if delayed != retries:
        text += f", {delayed} delayed job(s) in all"
    if delayed:
        text += "; run again once they are due, or run without --burst"
    return text


__all__ = ["BURST_SAMPLE", "TALLY_ENV", "read_tallies", "summary", "write_tally"]
