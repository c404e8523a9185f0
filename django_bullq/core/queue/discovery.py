"""Queues found in Redis that no setting names: an incremental ``SCAN`` for
``<prefix>:*:meta`` (BullMQ keeps no list of queues; every queue that was used has its
``meta`` hash).

A SCAN costs the whole keyspace: on a million keys one full walk took Redis about 1.7 s, which
every admin overview (and its JSON, every 5 s) and every Prometheus scrape paid. So each
call walks at most :data:`KEYS_PER_CALL` keys from where the last one stopped, the names found
are kept by the process, and a name whose ``meta`` is gone (an obliterated queue) is dropped.
A keyspace smaller than that is walked whole on every call, as before; on a larger one a queue
that no setting names shows up once the walk reaches it (a million keys: within
``1_000_000 / KEYS_PER_CALL`` calls).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .queue import Queue

#: Keys one call asks SCAN to look at (its ``COUNT`` summed over the call's SCAN steps).
KEYS_PER_CALL = 20_000
#: ``COUNT`` of each SCAN step.
SCAN_STEP = 5_000
#: Names kept per connection (more are not added).
MAX_NAMES = 10_000


class _Walk:
    """One connection's walk: the SCAN cursor where it stopped and the names found so far."""

    def __init__(self) -> None:
        self.cursor = 0
        self.names: set[str] = set()
        self.lock = threading.Lock()


_walks: dict[tuple[int, str], _Walk] = {}
_walks_lock = threading.Lock()


def found_queue_names(queue: Queue) -> set[str]:
    """Queue names found in the Redis of ``queue`` (its connection and key prefix).

    Walks at most :data:`KEYS_PER_CALL` more keys of the SCAN, then checks that each name
    kept still has its ``meta`` (one pipeline) and drops those that have not.

    Returns:
        The names, without validation (the caller skips invalid ones).

    Raises:
        redis.RedisError: Redis unreachable (the caller decides what the page shows).
    """
    key = (id(queue.client.connection_pool), queue.prefix)
    with _walks_lock:
        walk = _walks.setdefault(key, _Walk())
    with walk.lock:
        _step(queue, walk)
        _drop_gone(queue, walk)
        return set(walk.names)


def _step(queue: Queue, walk: _Walk) -> None:
    prefix = queue.prefix
    looked = 0
    while looked < KEYS_PER_CALL:
        cursor, keys = queue.client.scan(walk.cursor, match=f"{prefix}:*:meta", count=SCAN_STEP)
        walk.cursor = int(cursor)
        looked += SCAN_STEP
        for raw in keys:
            text = raw.decode() if isinstance(raw, bytes) else str(raw)
            middle = text[len(prefix) + 1 : -len(":meta")]
            if middle and ":" not in middle and len(walk.names) < MAX_NAMES:
                walk.names.add(middle)
        if walk.cursor == 0:
            return  # a whole walk done: the next call starts again


def _drop_gone(queue: Queue, walk: _Walk) -> None:
    if not walk.names:
        return
    names = sorted(walk.names)
    pipe = queue.client.pipeline(transaction=False)
    for name in names:
        pipe.exists(f"{queue.prefix}:{name}:meta")
    for name, exists in zip(names, pipe.execute(), strict=True):
        if not exists:
            walk.names.discard(name)


def forget() -> None:
    """Drop every walk and the names found (tests; a settings change of connections)."""
    with _walks_lock:
        _walks.clear()
