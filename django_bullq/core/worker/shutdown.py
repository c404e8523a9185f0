"""Stopping on signals: the first SIGTERM/SIGINT closes gracefully (no new jobs; active ones get
the grace period, then go back to wait), a second one stops at once.

Used by the core :class:`~django_bullq.core.worker.Worker` and by the Django layer's
:class:`~django_bullq.worker.group.WorkerGroup`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Callable
from typing import Protocol

logger = logging.getLogger("django_bullq.worker")

#: The signals that stop workers.
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class Close(Protocol):
    """The ``close(force=...)`` of what runs (a worker or a group of workers)."""

    def __call__(self, *, force: bool) -> None:
        """Stop fetching; ``force``: hand active jobs back to wait at once."""


class SignalStop:
    """Turns stop signals into ``close(force=False)`` (the first) and ``close(force=True)``
    (any later one).

    Args:
        close: ``close(force=...)`` of what runs (a worker or a group of workers).
        grace_s: the grace period in s, for the log line.
        closing: tells whether it is closing already (then even a first signal forces);
            by default only an earlier signal counts.
    """

    def __init__(
        self,
        close: Close,
        grace_s: float,
        closing: Callable[[], bool] | None = None,
    ) -> None:
        self._close = close
        self._grace_s = grace_s
        self._closing = closing
        self.signalled = False

    def on_signal(self, signum: int) -> None:
        """Handle one stop signal (safe on the loop's thread, as a loop signal handler)."""
        name = signal.Signals(signum).name
        if self.signalled or (self._closing is not None and self._closing()):
            logger.warning("%s again: stopping now; active jobs go back to wait", name)
            self._close(force=True)
            return
        self.signalled = True
        logger.info("%s: no new jobs; active ones get %.1f s to finish", name, self._grace_s)
        self._close(force=False)

    def install(self, loop: asyncio.AbstractEventLoop) -> list[int]:
        """Handle :data:`STOP_SIGNALS` on ``loop``; returns those installed (none off the main
        thread or where the loop has no signal support)."""
        installed: list[int] = []
        for sig in STOP_SIGNALS:
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(sig, self.on_signal, sig)
                installed.append(sig)
        return installed
