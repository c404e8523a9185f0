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
from typing import Any, NamedTuple

from ..conf import get_queue
from ..core.clients import OUTAGE_ERRORS

#: Delayed jobs read to count the retries among them (the ones due first).
BURST_SAMPLE = 1000
#: Environment variable of a supervised ``--burst`` child: where it writes its tally.
TALLY_ENV = "BULLQ_BURST_TALLY"


class Tally(NamedTuple):
    """What the workers of a ``--burst`` run did: attempts that completed, failed for good, or
    failed and were retried (each retried attempt counts once)."""

    completed: int = 0
    failed: int = 0
    retried: int = 0

    def __add__(self, other: object) -> Tally:
        if not isinstance(other, Tally):
            return NotImplemented
        return Tally(*(a + b for a, b in zip(self, other, strict=True)))


def tally_of(workers: Sequence[Any]) -> Tally:
    """The :class:`Tally` of core workers (their ``processed``, ``failed``, ``retried``)."""
    return Tally(
        sum(w.processed for w in workers),
        sum(w.failed for w in workers),
        sum(w.retried for w in workers),
    )


def write_tally(directory: str, tally: Tally) -> None:
    """Write this process's tally into ``directory`` (one file per process id)."""
    path = Path(directory) / f"{os.getpid()}.json"
    path.write_text(json.dumps(tally._asdict()))


def read_tallies(directory: str) -> Tally:
    """The tallies in ``directory``, summed (a tally that cannot be read counts 0: the child
    died before it wrote one)."""
    total = Tally()
    for path in Path(directory).glob("*.json"):
        try:
            found = json.loads(path.read_text())
            total += Tally(*(int(found.get(field, 0)) for field in Tally._fields))
        except (OSError, ValueError, TypeError, AttributeError):
            continue
    return total


def summary(
    names: Sequence[str], tally: Tally, processes: int = 1, outbox_rows: int = 0
) -> str | None:
    """The closing line of a ``--burst`` run of queues ``names``: the jobs processed, the
    jobs left delayed (retries waiting out their backoff, delayed jobs) that no worker ran, and
    ``outbox_rows``, the outbox rows still not relayed (a relay error, or written meanwhile).

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
        except OUTAGE_ERRORS:
            return None
        delayed += count
        retries += sum(1 for job in sample if job.attempts_made > 0)
    by = f" by {processes} processes" if processes > 1 else ""
    ended = tally.completed + tally.failed
    text = f"runworker --burst: {ended} job(s) processed{by} "
    text += f"({tally.completed} completed, {tally.failed} failed"
    if tally.retried:
        text += f"; {tally.retried} failed attempt(s) retried"
    text += f"); {retries} retr{'y' if retries == 1 else 'ies'} still delayed"
    if delayed > BURST_SAMPLE:
        text += f" among the first {BURST_SAMPLE}"
    if delayed != retries:
        text += f", {delayed} delayed job(s) in all"
    if delayed:
        text += "; run again once they are due, or run without --burst"
    if outbox_rows:
        text += f"; {outbox_rows} outbox row(s) not relayed"
    return text


__all__ = [
    "BURST_SAMPLE",
    "TALLY_ENV",
    "Tally",
    "read_tallies",
    "summary",
    "tally_of",
    "write_tally",
]
