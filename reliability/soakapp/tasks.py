"""The soak task: sleep a little, then record the effect (idempotent set + per-job run count)."""

from __future__ import annotations

import functools
import os
import time

import redis

from django_bullq import task

#: Keys of the effects Redis (never restarted during a soak).
DONE_KEY = "soak:done"
RUNS_KEY = "soak:runs"


@functools.cache
def effects() -> redis.Redis:
    """The client of the effects Redis (thread-safe pool, one per process)."""
    return redis.Redis.from_url(
        os.environ["BULLQ_SOAK_EFFECTS_URL"], socket_timeout=30, socket_connect_timeout=5
    )


@task(name="soak.record")
def record(n: int, ms: float = 0.0) -> int:
    """Job ``n``: sleep ``ms`` milliseconds, then SADD n to the done set and count this run.

    Returns:
        How many times job ``n``'s body has completed (1 unless it ran again after a kill).
    """
    if ms > 0:
        time.sleep(ms / 1000)
    pipe = effects().pipeline(transaction=True)
    pipe.sadd(DONE_KEY, n)
    pipe.hincrby(RUNS_KEY, str(n), 1)
    return int(pipe.execute()[1])
