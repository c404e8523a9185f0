"""Backoff strategies for retries: BullMQ's ``fixed`` and ``exponential``, plus custom ones."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

#: A strategy gets (attempts_made, delay_ms, jitter, error) and returns the delay in ms;
#: -1 means "do not retry" (BullMQ's convention for custom strategies).
BackoffStrategy = Callable[[int, int, float, BaseException | None], int]


def _jittered(delay: float, jitter: float) -> int:
    if jitter > 0:
        return int(delay * (1 - jitter) + random.random() * delay * jitter)
    return int(round(delay))


def fixed(attempts_made: int, delay: int, jitter: float, error: BaseException | None) -> int:
    """Constant ``delay`` ms; with jitter j uniform in [delay*(1-j), delay)."""
    return _jittered(delay, jitter)


def exponential(attempts_made: int, delay: int, jitter: float, error: BaseException | None) -> int:
    """``round(2^(n-1) * delay)`` ms for attempt n = attempts_made (1-based), BullMQ's formula."""
    return _jittered(2 ** (max(attempts_made, 1) - 1) * delay, jitter)


STRATEGIES: dict[str, BackoffStrategy] = {"fixed": fixed, "exponential": exponential}


def register(name: str, strategy: BackoffStrategy) -> None:
    """Register a custom backoff type usable as ``backoff={"type": name, "delay": ms}``."""
    STRATEGIES[name] = strategy


def normalize(backoff: Any) -> dict[str, Any] | None:
    """BullMQ's stored shape: a number n becomes ``{"type": "fixed", "delay": n}``.

    Raises:
        ValueError: not a non-negative number, nor a dict with a ``type`` whose ``delay`` (if
            given) is a number >= 0 and whose ``jitter`` (if given) is a number in 0..1;
            ``fixed`` and ``exponential`` need a ``delay``.
    """
    if backoff is None:
        return None
    if isinstance(backoff, bool):
        raise ValueError("backoff must be a number of ms or a dict {type, delay, jitter}")
    if isinstance(backoff, int | float):
        if backoff < 0:
            raise ValueError("backoff delay must be >= 0 ms")
        return {"type": "fixed", "delay": int(backoff)}
    if isinstance(backoff, dict) and isinstance(backoff.get("type"), str):
        delay, jitter = backoff.get("delay"), backoff.get("jitter")
        if delay is not None and (not _is_number(delay) or delay < 0):
            raise ValueError(f"backoff delay must be a number of ms >= 0, not {delay!r}")
        if jitter is not None and (not _is_number(jitter) or not 0 <= jitter <= 1):
            raise ValueError(f"backoff jitter must be a number in 0..1, not {jitter!r}")
        if backoff["type"] in ("fixed", "exponential") and delay is None:
            raise ValueError(f"a {backoff['type']!r} backoff needs a delay in ms")
        # Other types are custom strategies: registered on our worker with register(), or
        # known to the Node / Python BullMQ worker that will process the job.
        return dict(backoff)
    raise ValueError("backoff must be a number of ms or a dict {type, delay, jitter}")


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def compute_delay(
    backoff: dict[str, Any] | int | float | None,
    attempts_made: int,
    error: BaseException | None = None,
) -> int:
    """Delay in ms before the next attempt; 0 = retry at once, -1 = do not retry.

    Args:
        backoff: stored opts.backoff (``{"type", "delay", "jitter"}``) or None (retry at once).
        attempts_made: attempts made including the one that just failed (1-based).

    Raises:
        KeyError: the backoff type is neither built in nor registered.
        ValueError: the stored backoff has an unusable shape (see :func:`normalize`).
    """
    if not backoff:
        return 0
    shape = normalize(backoff) or {}  # also a bare number of ms, as some producers store it
    strategy = STRATEGIES[str(shape.get("type"))]
    delay = int(shape.get("delay") or 0)
    jitter = float(shape.get("jitter") or 0)
    return int(strategy(attempts_made, delay, jitter, error))
