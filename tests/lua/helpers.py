"""A thin typed driver over the Lua scripts: raw return codes, exact Redis state readers.

Every call goes through ``Scripts(client).run(name, keys, args, raise_codes=False)`` so the tests
see the scripts' raw answers, and every key comes from :class:`QueueKeys` / ``FETCH_KEYS`` /
``ADD_KEYS`` so the tests share the production key lists.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import redis

from django_bullq.core.calls import ADD_KEYS, FETCH_KEYS
from django_bullq.core.keys import QueueKeys
from django_bullq.core.scripts import Scripts

#: A fixed client clock (ms) for scripts; the protocol reference's example timestamp.
NOW = 1_795_994_458_434
#: Lock token used by the "worker" of these tests.
TOKEN = "worker-a:1"
LOCK_MS = 30_000
TWO_32 = 2**32

Event = tuple[str, ...]
"""One stream entry as its flat field/value sequence: ("event", "added", "jobId", "1", ...)."""


def delayed_score(due_ms: int, seq: int = 0) -> int:
    """Protocol §4.1: due ms × 4096 + sequence."""
    return due_ms * 4096 + seq


def prioritized_score(priority: int, counter: int) -> int:
    """Protocol §4.2: priority × 2^32 + (counter mod 2^32)."""
    return priority * TWO_32 + counter % TWO_32


@dataclass
class LuaQueue:
    """One queue's keys plus the registered scripts of a decoding client."""

    r: redis.Redis
    keys: QueueKeys
    scripts: Scripts = field(init=False)

    def __post_init__(self) -> None:
        self.scripts = Scripts(self.r)

    # --- key lists -------------------------------------------------------------------------

    @property
    def prefix(self) -> str:
        return self.keys.key_prefix

    def fetch_keys(self) -> list[str]:
        return [self.keys[s] for s in FETCH_KEYS]

    def add_keys(self) -> list[str]:
        return [self.keys[s] for s in ADD_KEYS]

    def finish_keys(self, job_id: str, target: str = "completed") -> list[str]:
        return [*self.fetch_keys(), self.keys[target], self.keys.job(job_id)]

    def stalled_keys(self) -> list[str]:
        return [
            self.keys[s]
            for s in (
                "stalled",
                "wait",
                "active",
                "stalled-check",
                "meta",
                "paused",
                "marker",
                "events",
            )
        ]

    # --- scripts ---------------------------------------------------------------------------

    def run(self, name: str, keys: Sequence[str], args: Sequence[Any]) -> Any:
        return self.scripts.run(name, keys, args, raise_codes=False)

    def add(
        self,
        *,
        job_id: str = "",
        name: str = "job",
        data: str = "{}",
        opts: str = '{"attempts":0}',
        timestamp: int = NOW,
        delay: int = 0,
        priority: int = 0,
        lifo: bool = False,
        parent_key: str = "",
        parent: str = "",
    ) -> Any:
        return self.run(
            "addJob",
            self.add_keys(),
            [
                self.prefix,
                job_id,
                name,
                data,
                opts,
                timestamp,
                delay,
                priority,
                "1" if lifo else "0",
                parent_key,
                parent,
            ],
        )

    def activate(
        self,
        *,
        token: str = TOKEN,
        now: int = NOW,
        lock_ms: int = LOCK_MS,
        limiter_max: int = 0,
        limiter_duration: int = 0,
        worker_name: str = "",
    ) -> Any:
        return self.run(
            "moveToActive",
            self.fetch_keys(),
            [self.prefix, token, lock_ms, now, limiter_max, limiter_duration, worker_name],
        )

    def add_active(self, job_id: str = "", *, token: str = TOKEN, **add: Any) -> str:
        """Add a job and activate it (it must be the next job) with ``token``; returns its id."""
        new_id = self.add(job_id=job_id, **add)
        fetched = self.activate(token=token)
        assert fetched[1] == new_id, fetched
        return str(new_id)

    def finish(
        self,
        job_id: str,
        *,
        target: str = "completed",
        value: str = '"ok"',
        token: str = TOKEN,
        now: int = NOW + 1000,
        keep_count: int = -1,
        keep_age: int = 0,
        keep_limit: int = 1000,
        fetch_next: bool = False,
        lock_ms: int = LOCK_MS,
        limiter_max: int = 0,
        limiter_duration: int = 0,
        worker_name: str = "",
        attempts: int = 0,
        stacktrace: str = "",
    ) -> Any:
        return self.run(
            "moveToFinished",
            self.finish_keys(job_id, target),
            [
                self.prefix,
                job_id,
                now,
                target,
                value,
                token,
                keep_count,
                keep_age,
                keep_limit,
                "1" if fetch_next else "0",
                lock_ms,
                limiter_max,
                limiter_duration,
                worker_name,
                attempts,
                stacktrace,
            ],
        )

    # --- state readers ---------------------------------------------------------------------

    def job(self, job_id: str) -> dict[str, str]:
        raw: dict[Any, Any] = cast(Any, self.r.hgetall(self.keys.job(job_id)))
        return {str(k): str(v) for k, v in raw.items()}

    def lst(self, suffix: str) -> list[str]:
        """A list key, left to right (``wait``: the right end runs next)."""
        return [str(x) for x in cast(Any, self.r.lrange(self.keys[suffix], 0, -1))]

    def zset(self, suffix: str) -> list[tuple[str, float]]:
        """A sorted set, lowest score first, scores as Redis returns them (doubles)."""
        raw: list[Any] = cast(Any, self.r.zrange(self.keys[suffix], 0, -1, withscores=True))
        return [(str(m), float(s)) for m, s in raw]

    def members(self, suffix: str) -> set[str]:
        return {str(m) for m in cast(Any, self.r.smembers(self.keys[suffix]))}

    def events(self) -> list[Event]:
        """Every stream entry as a flat tuple of its fields and values, in stream order."""
        entries: list[tuple[str, dict[str, str]]] = cast(Any, self.r.xrange(self.keys["events"]))
        return [tuple(str(x) for pair in fields.items() for x in pair) for _, fields in entries]

    def event_names(self) -> list[str]:
        return [e[1] for e in self.events()]

    def clear_events(self) -> None:
        self.r.delete(self.keys["events"])

    def lock(self, job_id: str) -> str | None:
        value = self.r.get(self.keys.job(job_id) + ":lock")
        return None if value is None else str(value)

    def lock_pttl(self, job_id: str) -> int:
        return int(self.r.pttl(self.keys.job(job_id) + ":lock"))

    def exists(self, *suffixes: str) -> int:
        return int(self.r.exists(*(self.keys[s] for s in suffixes)))

    def job_keys_exist(self, job_id: str) -> int:
        k = self.keys.job(job_id)
        return int(
            self.r.exists(
                k,
                f"{k}:logs",
                f"{k}:dependencies",
                f"{k}:processed",
                f"{k}:failed",
                f"{k}:unsuccessful",
                f"{k}:lock",
            )
        )


def fields_of(flat: Sequence[Any]) -> dict[str, str]:
    """HGETALL's flat array (as returned inside a fetch tuple) as a dict."""
    return {str(flat[i]): str(flat[i + 1]) for i in range(0, len(flat), 2)}


def opts_json(**opts: Any) -> str:
    """Compact JSON for a stored ``opts`` value."""
    return json.dumps({"attempts": 0, **opts}, separators=(",", ":"))
