"""Builders of the scripts that act on a whole queue (pause, promote / retry / clean / drain
many jobs, obliterate) and of the one read script (``getJobFields``), under the rules of
:mod:`~django_bullq.core.calls.builders`: named after the script, KEYS from the positional
arguments, ARGV as keyword-only arguments in the header's order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..keys import QueueKeys
from .builders import BATCH_MOVE_KEYS, _flag, key_set
from .call import Call


def pause(keys: QueueKeys, *, state: str) -> Call[int]:
    """pause-7: ``state`` ``"paused"`` or ``"resumed"``; replies legacy jobs left to move."""
    suffixes = ("wait", "paused", "meta", "prioritized", "events", "delayed", "marker")
    return Call("pause", key_set(keys, suffixes), (state,), parse=int)


def promote_jobs(keys: QueueKeys, *, count: int) -> Call[int]:
    """promoteJobs-6: move up to ``count`` delayed jobs to wait; replies how many."""
    return Call(
        "promoteJobs",
        key_set(keys, (*BATCH_MOVE_KEYS, "delayed")),
        (keys.key_prefix, count),
        parse=int,
    )


def retry_jobs(keys: QueueKeys, *, count: int, timestamp: int, state: str) -> Call[int]:
    """retryJobs-6: move up to ``count`` jobs of ``state`` back to wait; replies how many."""
    return Call(
        "retryJobs",
        key_set(keys, (*BATCH_MOVE_KEYS, state)),
        (keys.key_prefix, count, timestamp, state),
        parse=int,
    )


def clean_jobs_in_set(keys: QueueKeys, *, cutoff: int, limit: int, state: str) -> Call[Any]:
    """cleanJobsInSet-3: remove up to ``limit`` jobs of set ``state``; replies their ids."""
    return Call(
        "cleanJobsInSet",
        (keys[state], keys["events"], keys["meta"]),
        (keys.key_prefix, cutoff, limit, state),
    )


def drain(keys: QueueKeys, *, delayed: bool, count: int, kept: Sequence[int]) -> Call[Any]:
    """drain-5: remove up to ``count`` waiting jobs; ``kept`` is the 4 counts of the last call."""
    return Call(
        "drain",
        key_set(keys, ("wait", "paused", "delayed", "prioritized", "pc")),
        (keys.key_prefix, _flag(delayed), count, *kept),
    )


def obliterate(keys: QueueKeys, *, count: int, force: bool, cursor: str) -> Call[Any]:
    """obliterate-2: one step of deleting the queue; replies the next cursor or 0 (done)."""
    return Call(
        "obliterate", (keys["meta"], keys["active"]), (keys.key_prefix, count, _flag(force), cursor)
    )


def get_job_fields(
    keys: QueueKeys, *, field_count: int, fields_and_ids: Sequence[str]
) -> Call[list[Any]]:
    """getJobFields-1: ``field_count`` field names then the job ids, in ``fields_and_ids``;
    replies one row of the fields' values (bytes or None) per id, in order."""
    return Call(
        "getJobFields",
        (keys.job(""),),
        (field_count, *fields_and_ids),
        parse=list,
        raise_codes=False,
    )
