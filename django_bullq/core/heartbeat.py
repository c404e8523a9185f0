"""Worker liveness: a heartbeat key per worker, refreshed only while its fetch loop is alive.

Keys (django_bullq's own, not BullMQ's; job ids cannot hold ``:`` so they never collide):

* ``<prefix>:<queue>:bullq:workers:<name>``: JSON about the worker, with a TTL of
  :data:`TTL_S` s. The worker rewrites it every :data:`INTERVAL_S` s, but only when its fetch
  loop passed a checkpoint within the time that loop's current wait may take, so a worker whose
  loop is stuck (or that cannot reach Redis) lets the key expire.
* ``<prefix>:<queue>:bullq:workers``: a sorted set name -> last beat (ms), so that a worker
  whose key expired can still be reported as stale. Entries older than a day are pruned, and
  the set itself expires a day after the last beat (obliterate leaves no key behind for long).

``manage.py bullq health`` reads them (:func:`read_workers`).
"""

from __future__ import annotations

import json
import os
import socket
from dataclasses import dataclass
from typing import Any

from .keys import QueueKeys
from .options import now_ms
from .serialization import to_str

#: Seconds between two heartbeats of a healthy worker.
INTERVAL_S = 5.0
#: Seconds a heartbeat key lives: three missed beats make a worker stale.
TTL_S = 15
#: Registry entries older than this (ms) are dropped at each beat.
PRUNE_AFTER_MS = 24 * 3600 * 1000


def registry_key(keys: QueueKeys) -> str:
    """``<prefix>:<queue>:bullq:workers`` (sorted set: worker name -> last beat, ms)."""
    return keys["bullq:workers"]


def beat_key(keys: QueueKeys, name: str) -> str:
    """``<prefix>:<queue>:bullq:workers:<name>`` (JSON string with a TTL)."""
    return keys[f"bullq:workers:{name}"]


def default_name(worker_id: str) -> str:
    """A worker name when none was given: ``<host>:<pid>:<8 hex>``."""
    return f"{socket.gethostname()}:{os.getpid()}:{worker_id[:8]}"


async def abeat(client: Any, keys: QueueKeys, name: str, info: dict[str, Any]) -> None:
    """Write one heartbeat (key with TTL + registry score; prunes day-old entries)."""
    now = now_ms()
    value = {**info, "name": name, "host": socket.gethostname(), "pid": os.getpid(), "beat": now}
    pipe = client.pipeline(transaction=False)
    pipe.set(beat_key(keys, name), json.dumps(value), ex=TTL_S)
    pipe.zadd(registry_key(keys), {name: now})
    pipe.zremrangebyscore(registry_key(keys), "-inf", now - PRUNE_AFTER_MS)
    pipe.expire(registry_key(keys), PRUNE_AFTER_MS // 1000)  # gone a day after the last worker
    await pipe.execute()


async def aforget(client: Any, keys: QueueKeys, name: str) -> None:
    """Remove a worker that stopped cleanly (key and registry entry)."""
    pipe = client.pipeline(transaction=False)
    pipe.delete(beat_key(keys, name))
    pipe.zrem(registry_key(keys), name)
    await pipe.execute()


@dataclass(frozen=True, slots=True)
class WorkerBeat:
    """One worker as the heartbeat keys show it.

    Attributes:
        name: worker name. alive: its heartbeat key exists (beat within :data:`TTL_S` s).
        last_beat: ms timestamp of the last beat. info: the JSON it wrote (``{}`` when stale):
            host, pid, queue, started (ms), processed, failed, active, concurrency.
    """

    name: str
    alive: bool
    last_beat: int
    info: dict[str, Any]


def read_workers(client: Any, keys: QueueKeys) -> list[WorkerBeat]:
    """Every worker of the queue seen in the last day, alive ones first, then by name.

    Args:
        client: a sync redis-py client (any ``decode_responses``).
        keys: the queue's :class:`QueueKeys`.
    """
    entries = client.zrange(registry_key(keys), 0, -1, withscores=True)
    names = [to_str(name) or "" for name, _ in entries]
    values = client.mget([beat_key(keys, n) for n in names]) if names else []
    beats = []
    for (_, score), name, value in zip(entries, names, values, strict=True):
        info = json.loads(to_str(value) or "{}") if value is not None else {}
        beats.append(
            WorkerBeat(
                name=name,
                alive=value is not None,
                last_beat=int(score),
                info=info if isinstance(info, dict) else {},
            )
        )
    return sorted(beats, key=lambda b: (not b.alive, b.name))
