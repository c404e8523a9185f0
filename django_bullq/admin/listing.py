"""Which source answers a filtered job list: the job index or a walk over Redis.

Completed and failed jobs are looked up in the job index (:mod:`django_bullq.admin.index_search`)
when ``BULLQ["JOB_INDEX"]["ENABLED"]`` is on; every other state, and those two without the
index, are walked in Redis (:mod:`django_bullq.admin.scan`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import index_search, scan
from .found import Walk
from .search import FINISHED_STATES, JobFilter

#: Jobs an "every matching job" action acts on at most per confirmation.
MAX_MATCHING = 10_000

if TYPE_CHECKING:
    from ..core.queue import Queue


def uses_index(state: str, flt: JobFilter) -> bool:
    """True when a filter of ``state`` is answered by the job index."""
    return state in FINISHED_STATES and not flt.id and index_search.enabled()


def find(queue: Queue, state: str, flt: JobFilter, *, cursor: int = 0, want: int = 50) -> Walk:
    """A page (``want`` jobs at most) of the jobs of ``state`` passing ``flt`` from ``cursor``.

    Returns:
        A :class:`~django_bullq.admin.found.Walk` (``source`` ``"index"`` or ``"redis"``).
    """
    if uses_index(state, flt):
        return index_search.find(queue, state, flt, cursor=cursor, want=want)
    return scan.walk(queue, state, flt, cursor=cursor, want=want)


def matching_ids(queue: Queue, state: str, flt: JobFilter, limit: int | None = None) -> list[str]:
    """The ids of every job of ``state`` passing ``flt``, newest first, at most ``limit``
    (default :data:`MAX_MATCHING`)."""
    limit = MAX_MATCHING if limit is None else limit
    if uses_index(state, flt):
        return index_search.matching_ids(queue, state, flt, limit)
    return scan.matching_ids(queue, state, flt, limit)


def count_matching(queue: Queue, state: str, flt: JobFilter) -> int:
    """How many jobs of ``state`` pass ``flt`` now."""
    if uses_index(state, flt):
        return index_search.count(queue, state, flt)
    return len(scan.matching_ids(queue, state, flt, limit=2**62))  # a full walk
