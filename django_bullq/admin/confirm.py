"""What a destructive action's confirmation says will go: the jobs per state, counted now.

Read with one ``MULTI`` of counts (``Queue.get_job_counts``) when the page renders; jobs that
arrive or finish before the operator confirms change the real figure, so the page says "now".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..core.job import STATES

if TYPE_CHECKING:
    from ..core.queue import Queue
    from .actions import Action

#: The states "Clean by age" offers, as its form names them, and the count state of each.
CLEAN_CHOICES = (
    ("completed", "completed"),
    ("failed", "failed"),
    ("wait", "waiting"),
    ("delayed", "delayed"),
    ("prioritized", "prioritized"),
)


@dataclass(frozen=True)
class Goes:
    """Jobs a queue action would delete, per state, as counted now.

    ``counts`` are ``(state, jobs)`` pairs; ``total`` is their sum; ``optional`` the jobs a
    checkbox of the confirmation adds (drain's "also delayed jobs"); ``at_most`` is True when
    only part of the counted jobs go (a clean by age).
    """

    counts: list[tuple[str, int]]
    total: int
    optional: list[tuple[str, int]] = field(default_factory=list)
    at_most: bool = False


def what_goes(action: Action, queue: Queue) -> Goes | None:
    """The jobs a confirmed queue ``action`` deletes, or None for one that deletes none or
    acts on a selection (whose count the page shows already).

    Obliterate: every job of every state. Drain: the waiting and prioritized jobs (the delayed
    ones as ``optional``). Remove all failed: the failed jobs. Clean by age: at most the jobs of
    each state it can clean.
    """
    if not action.danger or action.on_jobs:
        return None
    counts = queue.get_job_counts()
    if action.name == "obliterate":
        pairs = [(s, counts.get(s, 0)) for s in STATES]
        return Goes(pairs, sum(n for _, n in pairs))
    if action.name == "drain":
        pairs = [(s, counts.get(s, 0)) for s in ("waiting", "prioritized")]
        return Goes(pairs, sum(n for _, n in pairs), [("delayed", counts.get("delayed", 0))])
    if action.name == "remove_all":
        return Goes([("failed", counts.get("failed", 0))], counts.get("failed", 0))
    pairs = [(state, counts.get(state, 0)) for _, state in CLEAN_CHOICES]
    return Goes(pairs, sum(n for _, n in pairs), at_most=True)
