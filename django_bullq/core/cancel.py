"""Cancellation of running jobs: the per-job :class:`CancelToken` and the control-channel message.

A worker gives each running job a token. ``Worker.cancel_job`` (or a control message published
by ``Queue.cancel_job`` from any process, or the job's ``timeout``) cancels it:

* an ``async def`` processor gets :class:`asyncio.CancelledError` at its current ``await``;
* a sync processor runs in a thread, which cannot be interrupted: it checks
  ``job.cancelled`` / ``job.raise_if_cancelled()`` (or :func:`current_cancel_token`), and may
  sleep with ``token.wait(seconds)``, which returns early on cancellation.

Either way the attempt fails with :class:`~django_bullq.core.errors.CancelledJobError`.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import threading
from typing import Any

from .errors import CancelledJobError, JobTimeoutExceeded

#: Pub/Sub channel suffix (workers of ``<prefix>:<queue>`` listen on
#: ``<prefix>:<queue>:control``).
CONTROL_SUFFIX = "control"

_current: contextvars.ContextVar[CancelToken | None] = contextvars.ContextVar(
    "django_bullq_cancel_token", default=None
)


class CancelToken:
    """The cancellation state of one running job; thread-safe.

    Attributes:
        job_id: the job it belongs to.
    """

    def __init__(self, job_id: str) -> None:
        self.job_id = job_id
        #: made by the first wait() (a sync job sleeping on its token): most jobs never wait,
        #: and an Event (a Condition and two locks) per job is the worker's hot path
        self._event: threading.Event | None = None
        self._error: CancelledJobError | None = None
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Future[Any] | None = None

    @property
    def cancelled(self) -> bool:
        """True once the job was cancelled (or timed out)."""
        return self._error is not None

    @property
    def error(self) -> CancelledJobError | None:
        """The error the attempt fails with, once cancelled."""
        return self._error

    def raise_if_cancelled(self) -> None:
        """Raise :class:`CancelledJobError` (or :class:`JobTimeoutExceeded`) if cancelled."""
        if self._error is not None:
            raise self._error

    def wait(self, timeout: float | None = None) -> bool:
        """Sleep up to ``timeout`` seconds, waking early on cancellation; True if cancelled."""
        with self._lock:
            if self._event is None:
                self._event = threading.Event()
                if self._error is not None:
                    self._event.set()
            event = self._event
        return event.wait(timeout)

    def cancel(self, reason: str = "", *, unrecoverable: bool = False) -> bool:
        """Cancel the job; False if it was already cancelled (the first reason wins)."""
        return self._fire(CancelledJobError(self.job_id, reason, unrecoverable=unrecoverable))

    def time_out(self, timeout_ms: int) -> bool:
        """Cancel the job because it ran past ``timeout_ms``."""
        return self._fire(JobTimeoutExceeded(self.job_id, timeout_ms))

    def _fire(self, error: CancelledJobError) -> bool:
        with self._lock:
            if self._error is not None:
                return False
            self._error = error
            if self._event is not None:
                self._event.set()
            loop, task = self._loop, self._task
        if loop is not None and task is not None and not loop.is_closed():
            loop.call_soon_threadsafe(task.cancel)
        return True

    def bind_task(self, task: asyncio.Future[Any] | None) -> None:
        """Worker side: cancel ``task`` (the awaiting coroutine) on cancellation; None unbinds.

        Only bound while the processor awaits on the loop, never while it runs in a thread.
        """
        with self._lock:
            self._task = task
            self._loop = asyncio.get_running_loop() if task is not None else None
            fire = task is not None and self._error is not None
        if fire and task is not None:
            task.cancel()


def current_cancel_token() -> CancelToken | None:
    """The token of the job running in this thread / task, or None outside a worker."""
    return _current.get()


def set_current(token: CancelToken | None) -> contextvars.Token[CancelToken | None]:
    """Worker side: make ``token`` current in this context (returns the reset handle)."""
    return _current.set(token)


def reset_current(handle: contextvars.Token[CancelToken | None]) -> None:
    """Worker side: undo :func:`set_current`."""
    _current.reset(handle)


def cancel_message(job_id: str, reason: str = "", *, unrecoverable: bool = False) -> str:
    """The JSON published on the control channel: ``{"action": "cancel", "jobId", "reason"}``
    (``"unrecoverable": true`` only when set)."""
    message: dict[str, Any] = {"action": "cancel", "jobId": str(job_id), "reason": reason}
    if unrecoverable:
        message["unrecoverable"] = True
    return json.dumps(message, separators=(",", ":"))


def parse_control(raw: Any) -> dict[str, Any] | None:
    """A control message as a dict, or None when it is not a JSON object with an ``action``."""
    if isinstance(raw, bytes):
        raw = raw.decode("utf-8", "replace")
    try:
        message = json.loads(raw)
    except (TypeError, ValueError):
        return None
    if not isinstance(message, dict) or not isinstance(message.get("action"), str):
        return None
    return message


__all__ = [
    "CONTROL_SUFFIX",
    "CancelToken",
    "cancel_message",
    "current_cancel_token",
    "parse_control",
]
