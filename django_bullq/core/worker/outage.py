"""A Redis outage as the worker's log tells it: one line when it starts, one when it ends.

Every part of a running worker that talks to Redis (the fetch loop, the marker wait, the
heartbeat, lock renewal, the stalled check, retention) meets the same outage, each about once
a second. They report to :data:`outages`, which logs ``Redis at host:port unreachable,
retrying`` on the first failure for that address and ``Redis at host:port reconnected`` on the
first success after it, whichever queue or duty saw them, and nothing in between; credentials
Redis refuses (a password rotated under a running worker) are said as such, once.
"""

from __future__ import annotations

import logging
import time

from ..clients import AUTHENTICATION_ERRORS, OUTAGE_ERRORS

logger = logging.getLogger("django_bullq.worker")

#: s between two DEBUG lines saying an outage goes on (``runworker -v 2``): the failed calls
#: between them are counted, not each logged.
REPEAT_S = 10.0


def is_outage(exc: BaseException) -> bool:
    """True when ``exc`` says Redis could not be reached (refused, reset, timed out), which
    the worker rides out by retrying; False for any other error (a script's error, bad data).
    """
    return isinstance(exc, OUTAGE_ERRORS)


class Outages:
    """The Redis addresses a worker process currently cannot reach (one instance per process,
    :data:`outages`; the worker's loop is its only writer)."""

    def __init__(self) -> None:
        #: address -> monotonic time (s) of the first failure of the current outage
        self.down: dict[str, float] = {}
        #: addresses whose refused credentials this outage has logged
        self.refused: set[str] = set()
        #: address -> [monotonic time (s) of the last line said of the outage, calls failed
        #: since that line]
        self.quiet: dict[str, list[float]] = {}

    def failed(self, address: str, exc: BaseException, *, consecutive: int = 2) -> None:
        """Record a failure to reach ``address`` (``host:port``); logs only the first one of an
        outage (WARNING), the rest at DEBUG.

        Args:
            address: ``host:port``. exc: the error.
            consecutive: how many calls of the caller failed in a row. One failure alone is
                no outage: a pooled connection that died in an outage (or was closed by the
                server while idle) fails its first use after it, and the retry succeeds.
        """
        if isinstance(exc, AUTHENTICATION_ERRORS) and address not in self.refused:
            # a password rotated under a running worker: not a network fault, so it is said
            # once even inside an outage already logged (the old connections were dropped)
            self.refused.add(address)
            self.down.setdefault(address, time.monotonic())
            logger.warning(
                "Redis at %s refused the credentials (%s: %s); retrying until they work: "
                "fix the password or ACL user of this connection",
                address,
                type(exc).__name__,
                exc,
            )
            return
        if address in self.down:
            self._still_down(address, exc)
            return
        if consecutive < 2:
            logger.debug(
                "Redis at %s: a call failed (%s: %s); retrying it", address, type(exc).__name__, exc
            )
            return
        self.down[address] = time.monotonic()
        self.quiet[address] = [time.monotonic(), 0]
        logger.warning(
            "Redis at %s unreachable, retrying (%s: %s)", address, type(exc).__name__, exc
        )

    def _still_down(self, address: str, exc: BaseException) -> None:
        """One more failed call in the outage of ``address``: counted, and said (DEBUG) at
        most once per :data:`REPEAT_S` s."""
        quiet = self.quiet.setdefault(address, [time.monotonic(), 0])
        quiet[1] += 1
        now = time.monotonic()
        if now - quiet[0] < REPEAT_S:
            return
        logger.debug(
            "Redis at %s still unreachable after %.0f s (%d calls failed in the last %.0f s; "
            "last %s: %s)",
            address,
            now - self.down[address],
            quiet[1],
            now - quiet[0],
            type(exc).__name__,
            exc,
        )
        self.quiet[address] = [now, 0]

    def reached(self, address: str) -> None:
        """Record a successful call to ``address``; logs ``reconnected`` (WARNING) when it
        ends an outage."""
        self.refused.discard(address)
        self.quiet.pop(address, None)
        since = self.down.pop(address, None)
        if since is not None:
            logger.warning(
                "Redis at %s reconnected after %.1f s", address, time.monotonic() - since
            )


#: The process's outage log.
outages = Outages()
