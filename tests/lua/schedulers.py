"""Drivers of the job scheduler scripts for the Lua tests (raw answers, fixed clock)."""

from __future__ import annotations

from typing import Any

from django_bullq.core.calls import SCHEDULER_KEYS
from tests.lua.helpers import NOW, LuaQueue


def keys(lq: LuaQueue) -> list[str]:
    return [lq.keys[s] for s in SCHEDULER_KEYS]


def upsert(
    lq: LuaQueue,
    sid: str = "s",
    *,
    now: int = NOW,
    next_millis: int | str = "",
    name: str = "tick",
    data: str = "",
    opts: str = "",
    every: int | str = "",
    pattern: str = "",
    tz: str = "",
    limit: int | str = "",
    start: int | str = "",
    end: int | str = "",
    offset: int | str = "",
) -> Any:
    return lq.run(
        "addJobScheduler",
        keys(lq),
        [
            lq.prefix,
            sid,
            now,
            next_millis,
            name,
            data,
            opts,
            every,
            pattern,
            tz,
            limit,
            start,
            end,
            offset,
        ],
    )


def update(
    lq: LuaQueue, producer: str, sid: str = "s", *, now: int = NOW, next_millis: int | str = ""
) -> Any:
    return lq.run("updateJobScheduler", keys(lq), [lq.prefix, sid, producer, now, next_millis])


def remove(lq: LuaQueue, sid: str = "s") -> Any:
    return lq.run("removeJobScheduler", [lq.keys["repeat"]], [lq.prefix, sid])
