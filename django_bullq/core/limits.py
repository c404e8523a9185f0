"""Values of the rate limiter and the global concurrency cap (protocol §5.12, §5.13).

The keys are shared with every BullMQ worker of a queue: ``limiter`` (a counter with a PX TTL, or
:data:`MANUAL_LIMIT` for a manual rate limit) and the ``meta`` fields ``max``, ``duration``
(ms) and ``concurrency``. The fetch scripts enforce them; this module validates and parses.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .serialization import to_str

#: The limiter value of a manual rate limit (JavaScript's Number.MAX_SAFE_INTEGER).
MANUAL_LIMIT = 9_007_199_254_740_991


def positive_int(value: Any, what: str = "value") -> int:
    """``value`` if it is an int >= 1. Raises ValueError otherwise (bools refused)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{what} must be an int >= 1, not {value!r}")
    return value


def positive_ms(value: Any) -> int:
    """A duration in ms that must be an int >= 1. Raises ValueError otherwise."""
    return positive_int(value, "a duration in ms")


def rate_limit_meta(max_jobs: int, duration_ms: int) -> dict[str, int]:
    """The ``meta`` fields of a global rate limit. Raises ValueError for non-positive values."""
    return {"max": positive_int(max_jobs, "max_jobs"), "duration": positive_ms(duration_ms)}


def parse_int(raw: Any) -> int | None:
    """An integer meta field as written by any client (``"3"``, ``b"3"``), None if absent/bad."""
    text = to_str(raw)
    try:
        return int(float(text)) if text else None
    except ValueError:
        return None


def parse_rate_limit(raw: Sequence[Any]) -> dict[str, int] | None:
    """``HMGET meta max duration`` as ``{"max", "duration"}``; None unless both are set."""
    max_jobs, duration = parse_int(raw[0]), parse_int(raw[1])
    if max_jobs is None or duration is None:
        return None
    return {"max": max_jobs, "duration": duration}


def rate_limit_ttl(replies: Sequence[Any], max_jobs: int | None) -> int:
    """BullMQ's ``getRateLimitTtl`` from ``[HGET meta max, GET limiter, PTTL limiter]``.

    With a max (argument first, else ``meta.max``): the PTTL when the counter reached it, else
    0. Without any max: the PTTL as is (0 when the key has no TTL or does not exist).
    """
    meta_max, used, pttl = parse_int(replies[0]), parse_int(replies[1]), int(replies[2])
    limit = max_jobs or meta_max
    if limit:
        return pttl if (used or 0) >= limit and pttl > 0 else 0
    return max(pttl, 0)
