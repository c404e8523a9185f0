"""Reads of a queue's sets as :class:`~.call.Read` values: counts, a job's state, id ranges.

Each is written once and run by ``Queue._read`` / ``Queue._aread`` (or, for :func:`jobs`, by
``Queue._drive`` / ``Queue._adrive``). ``states`` are BullMQ state names, already checked.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..keys import QueueKeys
from ..serialization import to_str
from .call import Read, Steps

#: States kept in lists, with their key; every other state is a sorted set of its own name.
LIST_STATES = {"waiting": "wait", "paused": "paused", "active": "active"}
#: The order :func:`job_state` looks in (BullMQ ``getState``).
STATE_ORDER = (
    "completed",
    "failed",
    "delayed",
    "prioritized",
    "active",
    "waiting",
    "paused",
    "waiting-children",
)


def _key(keys: QueueKeys, state: str) -> str:
    return keys[LIST_STATES.get(state, state)]


def job_counts(keys: QueueKeys, states: Sequence[str]) -> Read[dict[str, int]]:
    """``{state: count}`` of ``states``, read atomically (BullMQ ``getJobCounts``)."""
    commands = tuple(("LLEN" if s in LIST_STATES else "ZCARD", _key(keys, s)) for s in states)
    return Read(commands, lambda replies: dict(zip(states, map(int, replies), strict=True)))


def job_state(keys: QueueKeys, job_id: str) -> Read[str]:
    """The first state of :data:`STATE_ORDER` holding ``job_id``, or ``"unknown"``."""
    commands = tuple(
        ("LPOS" if s in LIST_STATES else "ZSCORE", _key(keys, s), job_id) for s in STATE_ORDER
    )
    return Read(commands, _first_state)


def _first_state(replies: list[Any]) -> str:
    for state, reply in zip(STATE_ORDER, replies, strict=True):
        if reply is not None:
            return "waiting" if state == "paused" else state
    return "unknown"


def job_ids(
    keys: QueueKeys, states: Sequence[str], start: int, end: int, *, asc: bool
) -> Read[list[str]]:
    """Ids in ``states``, newest first unless ``asc`` (BullMQ ``getRanges``); not atomic."""
    commands: list[tuple[Any, ...]] = []
    for state in states:
        key = _key(keys, state)
        if state in LIST_STATES:
            # lists: the right end is the oldest / next to run
            span = (-(end + 1) if end >= 0 else 0, -(start + 1)) if asc else (start, end)
            commands.append(("LRANGE", key, *span))
        else:
            commands.append(("ZRANGE" if asc else "ZREVRANGE", key, start, end))

    def merge(replies: list[Any]) -> list[str]:
        ids: list[str] = []
        for state, reply in zip(states, replies, strict=True):
            items = [to_str(x) or "" for x in reply]
            if state in LIST_STATES and asc:
                items.reverse()
            ids.extend(items)
        return ids

    return Read(tuple(commands), merge, transaction=False)


def job_hashes(
    keys: QueueKeys, states: Sequence[str], start: int, end: int, *, asc: bool
) -> Steps[list[tuple[str, Any]]]:
    """:func:`job_ids`, then each job's hash: ``[(id, raw hash)]`` of the jobs that exist (the
    raw hash of a key that is not a hash is its WRONGTYPE error, for :meth:`Job.from_hash`)."""
    ids: list[str] = yield job_ids(keys, states, start, end, asc=asc)
    raws: list[Any] = yield Read(
        tuple(("HGETALL", keys.job(i)) for i in ids), list, transaction=False, raise_on_error=False
    )
    return [(i, raw) for i, raw in zip(ids, raws, strict=True) if raw]
