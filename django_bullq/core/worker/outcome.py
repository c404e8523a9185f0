"""How an attempt ends: complete, fail, retry or delay (BullMQ ``moveToFinished``,
``retryJob``, ``moveToDelayed``), settled through a Redis outage while the lock lives.

:func:`decide` is the failure policy as a pure function (no Redis): retry after a backoff, or
fail for good.
"""

from __future__ import annotations

import asyncio
import logging
import os
import traceback
from dataclasses import dataclass
from typing import Any, TypedDict

from .. import backoff, calls, instrument
from ..clients import OUTAGE_ERRORS
from ..errors import (
    BullqError,
    JobNotFound,
    JobNotInState,
    LockMismatch,
    LockMissing,
    UnrecoverableError,
)
from ..job import Job
from ..metrics import store as metrics_store
from ..options import normalize_keep, now_ms
from ..serialization import dumps
from .outage import outages
from .state import WorkerState

logger = logging.getLogger("django_bullq.worker")


class _AttemptEnd(TypedDict):
    """The ARGV retryJob and moveToDelayed share: which attempt ended, and why."""

    job_id: str
    now: int
    token: str
    failed_reason: str
    stacktrace: str


@dataclass(frozen=True, slots=True)
class Retry:
    """Try the job again after ``delay_ms`` ms (0: back to wait at once); ``reason`` is the
    attempt's ``failedReason``."""

    delay_ms: int
    reason: str


@dataclass(frozen=True, slots=True)
class Fail:
    """Fail the job for good with ``reason`` as its ``failedReason``."""

    reason: str


def decide(job: Job, exc: BaseException) -> Retry | Fail:
    """The failure policy for an attempt of ``job`` that raised ``exc`` (BullMQ's).

    Retry while attempts remain (``job.attempts_made + 1 < job.attempts``), after the delay of
    ``opts.backoff`` (:func:`~django_bullq.core.backoff.compute_delay`), unless ``exc`` is an
    :class:`UnrecoverableError` (by class or by name, as from Node), carries
    ``unrecoverable = True`` (``cancel_job(unrecoverable=True)``), or the backoff is unusable
    (then the reason says so).

    Returns:
        :class:`Retry` or :class:`Fail`.
    """
    reason = failed_reason(exc)
    final = isinstance(exc, UnrecoverableError) or type(exc).__name__ == "UnrecoverableError"
    final = final or getattr(exc, "unrecoverable", False) is True  # cancel_job(unrecoverable)
    if not final and job.attempts_made + 1 < job.attempts:
        try:
            delay = backoff.compute_delay(job.opts.get("backoff"), job.attempts_made + 1, exc)
        except (KeyError, ValueError, TypeError) as bad:
            return Fail(f"{reason} (no retry: unusable backoff {job.opts.get('backoff')!r}: {bad})")
        if delay >= 0:
            return Retry(delay, reason)
    return Fail(reason)


def failed_reason(exc: BaseException) -> str:
    """``exc``'s message as BullMQ stores it (Node ``err.message``, Python ``str(err)``), else
    its class name."""
    try:
        text = str(exc)
    except Exception:  # noqa: BLE001 - an exception whose __str__ fails
        text = ""
    return text or type(exc).__name__


def _run_ms(job: Job) -> int:
    """ms from the attempt's start (``processedOn``) to now; 0 when unknown."""
    return max(0, now_ms() - job.processed_on) if job.processed_on else 0


#: Where the frames of the worker's own code live (``django_bullq/``), and asyncio's: the
#: frames a task's error passes through on its way back to the worker.
_OWN_DIRS = (
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep,
    os.path.dirname(os.path.abspath(asyncio.__file__)) + os.sep,
)


def log_fields(queue: str, job: Job, event: str, attempt: int) -> dict[str, Any]:
    """The ``extra`` of a job's outcome log record: what a JSON log formatter writes as fields
    (docs/observability.md, "Logs").

    Returns:
        ``{"bullq_event": "completed" | "failed" | "retry", "queue", "job_id", "job_name",
        "attempt": int (1 = the first), "duration_ms": int (the attempt's run)}``.
    """
    return {
        "bullq_event": event,
        "queue": queue,
        "job_id": job.id,
        "job_name": job.name,
        "attempt": attempt,
        "duration_ms": _run_ms(job),
    }


def drop_worker_frames(exc: BaseException) -> BaseException:
    """``exc`` with the frames of the worker's own calls (the worker, its job threads, the
    task dispatch, asyncio) cut from the top of its traceback, so the trace stored in the job
    and logged starts at the task's code. A traceback with no other frame (an error raised by
    django_bullq itself) is left whole. Returns ``exc`` (its ``__traceback__`` replaced)."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename.startswith(_OWN_DIRS):
        tb = tb.tb_next
    if tb is not None and tb is not exc.__traceback__:
        exc.__traceback__ = tb
    return exc


def _stacktrace(exc: BaseException) -> list[str]:
    try:
        return ["".join(traceback.format_exception(exc))[-8000:]]
    except Exception:  # noqa: BLE001
        return [repr(exc)]


def traces(job: Job, exc: BaseException) -> list[str]:
    """The job's ``stacktrace`` after this failed attempt: one entry per failed attempt, the
    newest last, trimmed to ``opts.stackTraceLimit`` (0 keeps none), as Node and PyPI BullMQ do."""
    found = [*job.stacktrace, *_stacktrace(exc)]
    limit = job.opts.get("stackTraceLimit")
    if isinstance(limit, int) and not isinstance(limit, bool) and limit >= 0:
        found = found[-limit:] if limit else []
    return found


class Outcome(WorkerState):
    """The ends of attempts (a mixin of :class:`~django_bullq.core.worker.Worker`)."""

    async def _handle_failure(
        self, job: Job, exc: BaseException, attempt: instrument.Attempt | None = None
    ) -> Job | None:
        """Retry or fail the attempt of ``job`` that raised ``exc`` (policy: :func:`decide`)."""
        trace = traces(job, exc)
        verdict = decide(job, exc)
        if isinstance(verdict, Retry):
            logger.info(
                "worker %s: job %s (%s) attempt %d failed: %s; retry in %d ms (ran %d ms)",
                self.queue.name,
                job.id,
                job.name,
                job.attempts_made + 1,
                verdict.reason,
                verdict.delay_ms,
                _run_ms(job),
                extra=log_fields(self.queue.name, job, "retry", job.attempts_made + 1),
            )
            await self._retry(job, verdict.delay_ms, verdict.reason, trace, attempt)
            return None
        # The formatted trace, not exc_info: a log record holding the traceback would keep
        # the job's frames (and e.g. its database connection) alive. An error of ours (bad
        # input: no such task, data that does not fit its signature) is one readable line;
        # the traceback is for errors from the task's code, or asked for at DEBUG (-v 2).
        expected = isinstance(exc, BullqError) and not logger.isEnabledFor(logging.DEBUG)
        logger.error(
            "worker %s: job %s (%s) failed after %d attempt(s): %s (ran %d ms)%s",
            self.queue.name,
            job.id,
            job.name,
            job.attempts_made + 1,
            verdict.reason,
            _run_ms(job),
            "" if expected or not trace else "\n" + trace[-1],
            extra=log_fields(self.queue.name, job, "failed", job.attempts_made + 1),
        )
        self.failed += 1
        return await self._finish(job, "failed", verdict.reason, dumps(trace), attempt)

    async def _retry(
        self,
        job: Job,
        delay_ms: int,
        reason: str,
        trace: list[str],
        attempt: instrument.Attempt | None = None,
    ) -> None:
        """Retry ``job`` after ``delay_ms`` ms (moveToDelayed), or at once (retryJob)."""
        end = _AttemptEnd(
            job_id=job.id,
            now=now_ms(),
            token=job.token or "0",
            failed_reason=reason,
            stacktrace=dumps(trace),
        )
        if delay_ms > 0:
            call = calls.move_to_delayed(self.queue.keys, delay=delay_ms, skip_attempt=False, **end)
        else:
            call = calls.retry_job(self.queue.keys, **end)
        if attempt is not None:
            attempt.settling(instrument.DELAY if delay_ms > 0 else instrument.RETRY)
        await self._settle(call, job.id)
        self.retried += 1
        if self._metrics is not None:
            self._metrics.record(job, metrics_store.RETRIED, end["now"])
        if attempt is not None:
            attempt.end(instrument.DELAY if delay_ms > 0 else instrument.RETRY)

    async def _settle(self, call: calls.Call[Any], job_id: str) -> Any:
        """Run a script that ends an attempt, retrying through a Redis outage while the lock lives.

        A restarted Redis (AOF) still holds the job's lock, so finishing later is valid and
        spares a re-run by the stalled check (case B27). Retries stop once ``lock_duration``
        has passed: the job is then recovered as stalled.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.opts.lock_duration / 1000
        self._ending.add(job_id)
        try:
            return await self._settle_until(call, job_id, deadline)
        finally:
            self._ending.discard(job_id)

    async def _settle_until(self, call: calls.Call[Any], job_id: str, deadline: float) -> Any:
        loop = asyncio.get_running_loop()
        failures = 0
        while True:
            try:
                return await self._pipeline.call(call)
            except OUTAGE_ERRORS as exc:
                failures += 1
                delay = min(0.05 * 2**failures, 1.0)
                if loop.time() + delay >= deadline:
                    raise
                outages.failed(self.queue.connection.address(), exc, consecutive=failures)
                if failures == 1:  # said once a job; the outage's own lines say the rest
                    logger.debug(
                        "worker %s: %s of job %s failed (%s); retrying until it is written "
                        "or the lock expires",
                        self.queue.name,
                        call.script,
                        job_id,
                        exc,
                    )
                await asyncio.sleep(delay)

    def _keep(self, job: Job, target: str) -> tuple[int, int, int]:
        key = "removeOnComplete" if target == "completed" else "removeOnFail"
        value = job.opts.get(key)
        if value is None:
            value = (
                self.opts.remove_on_complete if target == "completed" else self.opts.remove_on_fail
            )
        try:
            return normalize_keep(value)
        except (ValueError, TypeError):
            return normalize_keep(None)

    async def _finish(
        self,
        job: Job,
        target: str,
        value: str,
        stacktrace: str = "",
        attempt: instrument.Attempt | None = None,
    ) -> Job | None:
        count, age, limit = self._keep(job, target)
        fetch_next = not (self._closing or self._paused_locally) and (
            self._limit_until <= asyncio.get_running_loop().time()
        )
        token = job.token or "0"
        now = now_ms()
        call = calls.move_to_finished(
            self.queue.keys,
            job_id=job.id,
            now=now,
            target=target,
            value=value,
            token=token,
            keep_count=count,
            keep_age=age,
            keep_limit=limit,
            fetch_next=fetch_next,
            lock_duration=self.opts.lock_duration,
            limiter_max=self.opts.limiter_max,
            limiter_duration=self.opts.limiter_duration,
            worker_name=self.opts.name,
            attempts=job.attempts,
            stacktrace=stacktrace,
            max_metrics_size=self.opts.metrics_max_data_points,
        )
        if attempt is not None:
            attempt.settling(target)
        reply = await self._settle(call, job.id)
        if self._metrics is not None:  # a few dict operations; flushed by a duty
            done = metrics_store.COMPLETED if target == "completed" else metrics_store.FAILED
            self._metrics.record(job, done, now)
        if attempt is not None:  # "completed" or "failed"
            attempt.end(target)
        if target == "completed":
            self.processed += 1
            if logger.isEnabledFor(logging.DEBUG):  # one line per job at -v 2
                logger.debug(
                    "worker %s: job %s (%s) completed in %d ms",
                    self.queue.name,
                    job.id,
                    job.name,
                    _run_ms(job),
                    extra=log_fields(self.queue.name, job, "completed", job.attempts_made + 1),
                )
        if isinstance(reply, list):
            nxt, _, _ = self._parse_fetch(reply, token)
            return nxt
        return None

    async def _refuse(
        self, job: Job, reason: str, attempt: instrument.Attempt | None
    ) -> Job | None:
        """Fail ``job`` without running it, for ``reason`` (from ``_refuse_reason``)."""
        logger.error(
            "worker %s: job %s (%s) failed without running: %s",
            self.queue.name,
            job.id,
            job.name,
            reason,
        )
        self.failed += 1
        # Keep earlier attempts' traces and add the refusal, as BullMQ appends.
        return await self._finish(job, "failed", reason, dumps([*job.stacktrace, reason]), attempt)

    async def _move_limited_back(self, job: Job, attempt: instrument.Attempt | None) -> None:
        """The processor raised the rate-limit error: job back to wait, honour the limiter TTL."""
        q = self.queue
        ttl = await q._arun(
            calls.move_job_from_active_to_wait(q.keys, job_id=job.id, token=job.token or "0")
        )
        if attempt is not None:
            attempt.end(instrument.RATE_LIMITED)
        if isinstance(ttl, int) and ttl > 0:
            self._limit_until = asyncio.get_running_loop().time() + ttl / 1000
        logger.info(
            "worker %s: job %s (%s) rate limited; back to wait, fetching again in %d ms",
            q.name,
            job.id,
            job.name,
            ttl if isinstance(ttl, int) else 0,
        )

    async def _hand_back(self, job: Job) -> None:
        """Move an active job of ours back to the front of wait, no attempt counted."""
        q = self.queue
        try:
            await q._arun(
                calls.move_job_from_active_to_wait(q.keys, job_id=job.id, token=job.token or "0")
            )
            logger.warning(
                "worker %s: job %s handed back to wait (worker closing or paused)", q.name, job.id
            )
        except (JobNotFound, LockMissing, LockMismatch, JobNotInState) as exc:
            # it finished, was removed or went to another worker as stalled while it ran on
            logger.info(
                "worker %s: job %s not handed back: no longer ours (%s)",
                q.name,
                job.id,
                exc.describe(),
            )
        except (BullqError, OSError) as exc:
            logger.warning("worker %s: could not hand back job %s: %s", q.name, job.id, exc)
