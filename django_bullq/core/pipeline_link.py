"""One connection of the asyncio pipeline (:mod:`~django_bullq.core.autopipeline`): the calls in
flight on it, in send order, the clock of its watchdog, and how its failures read to callers.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
from typing import Any

from redis.exceptions import ConnectionError as RedisConnectionError

from .clients import CLIENT_ERRORS, TIMEOUT_ERRORS, library_name


class Link:
    """One connection and the calls sent on it whose replies are still to be read."""

    __slots__ = (
        "conn",
        "dead",
        "inflight",
        "progress_at",
        "reader",
        "timeout_s",
        "used_at",
        "watchdog",
    )

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        #: The connection's socket timeout in s, or None to wait forever. Once the
        #: connection is up (:meth:`connected`) it is cleared on the connection, so that
        #: redis-py arms no timer around each read and write, and the watchdog applies it
        #: instead; while it connects, redis-py's own connect and handshake timeouts apply.
        #: A value that is not a number (a string from the environment, which check E003
        #: reports) stays on the connection, whose reads then fail with redis-py's own error.
        timeout = conn.socket_timeout
        self.timeout_s: float | None = None
        if isinstance(timeout, int | float) and not isinstance(timeout, bool) and timeout > 0:
            self.timeout_s = float(timeout)
        self.inflight: collections.deque[asyncio.Future[Any]] = collections.deque()
        self.reader: asyncio.Task[None] | None = None
        self.dead = False
        #: loop time of the last send on it
        self.used_at = 0.0
        #: loop time of the last reply, or of the send that put calls in flight on an idle link
        self.progress_at = 0.0
        #: the timer that fails the link when no reply comes for timeout_s (while in flight)
        self.watchdog: asyncio.TimerHandle | None = None

    def connected(self, now: float) -> None:
        """The connection is up (at loop time ``now``): from now on the watchdog, not
        redis-py, applies its timeout, the first reply being due ``timeout_s`` after ``now``."""
        self.progress_at = now
        if self.timeout_s is not None:
            self.conn.socket_timeout = None


def timeout_error(conn: Any, timeout_s: float) -> BaseException:
    """The client library's ``TimeoutError`` for a reply not come within ``timeout_s``."""
    library = library_name(conn)
    cls = next((c for c in TIMEOUT_ERRORS if library_name(c) == library), TIMEOUT_ERRORS[0])
    where = (getattr(conn, "host", "") and f"{conn.host}:{getattr(conn, 'port', '')}") or "Redis"
    return cls(f"Timeout waiting for {where}: no reply within {timeout_s} s")


def connection_error(exc: BaseException) -> BaseException:
    """``exc`` as callers should see a failed connection: redis errors and cancellation as they
    are, anything else (CPython's ``writelines`` on a transport already lost raises
    AttributeError or TypeError, python/cpython#136234) as a redis ``ConnectionError``."""
    if isinstance(exc, (*CLIENT_ERRORS, asyncio.CancelledError)):
        return exc
    error = RedisConnectionError(f"connection lost ({type(exc).__name__}: {exc})")
    error.__cause__ = exc
    return error


async def disconnect(link: Link) -> None:
    with contextlib.suppress(Exception):
        await link.conn.disconnect(nowait=True)


def fail(future: asyncio.Future[Any], exc: BaseException) -> None:
    if not future.done():
        if isinstance(exc, asyncio.CancelledError):
            future.cancel()
        else:
            future.set_exception(exc)


async def can_read(conn: Any) -> bool:
    """redis-py's check of an idle connection: ``can_read`` (8.0 and later; it deprecated
    ``can_read_destructive``, the name in earlier versions)."""
    if hasattr(conn, "can_read"):
        return bool(await conn.can_read())
    return bool(await conn.can_read_destructive())


__all__ = ["Link", "can_read", "connection_error", "disconnect", "fail", "timeout_error"]
