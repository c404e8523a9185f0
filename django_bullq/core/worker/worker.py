"""Worker: the asyncio loop that fetches jobs through the marker protocol and runs them.

Shape (arq's, with BullMQ's protocol): claim (``BZPOPMIN marker`` → ``moveToActive``), run under a
concurrency limit (async processors on the loop, sync ones in a thread pool), finish with
``moveToFinished`` which also claims the next job (one round trip per job on a busy queue),
heartbeat (``extendLocks``) and the shared stalled-job check; burst mode and graceful shutdown.
Fetches and finishes go through one :class:`~django_bullq.core.autopipeline.AutoPipeline`: the
calls of one loop pass share a write on one connection (docs/workers.md).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import math
from typing import Any

from .. import calls, eventloop, heartbeat, instrument
from ..autopipeline import AutoPipeline
from ..errors import (
    RATE_LIMIT_ERROR,
    RateLimitError,
    ScriptError,
    SerializationError,
    WaitingChildrenError,
)
from ..job import Job
from ..options import now_ms
from ..scheduler import aschedule_next
from ..serialization import dumps
from .control import listen_control
from .duties import Duties
from .execution import Execution
from .options import (
    BURST_MAX_FAILURES,
    FETCH_TIMEOUT_S,
    MAX_BLOCK_S,
    MAX_RATE_LIMIT_WAIT_S,
    JobHook,
    Processor,
    WorkerOptions,
)
from .outage import is_outage, outages
from .outcome import Outcome, drop_worker_frames, failed_reason
from .shutdown import SignalStop
from .state import parse_score
from .threads import JobThreads

logger = logging.getLogger("django_bullq.worker")


class Worker(Execution, Outcome, Duties):
    """Processes the jobs of one queue (BullMQ's ``Worker``).

    Args:
        queue: the :class:`Queue` to work on.
        processor: ``f(job) -> JSON value``; a coroutine function runs on the loop, a plain
            function in a thread pool, a :class:`Dispatcher` picks one of the two per job.
            Raise to fail the attempt; raise :class:`UnrecoverableError` to skip remaining
            attempts.
        options: :class:`WorkerOptions`.
        hooks: ``(before, after)`` callables run in the job's thread around each job.
        instrumentations: :class:`~django_bullq.core.instrument.Instrumentation` objects that
            see each attempt's start and end (beside those registered globally).
    """

    # --- public control --------------------------------------------------------------------

    def run(self, *, burst: bool = False, handle_signals: bool = True) -> None:
        """Run the worker on a new event loop until closed (or, with ``burst``, until idle)."""
        eventloop.run(self.arun(burst=burst, handle_signals=handle_signals), self.opts.event_loop)

    async def arun(self, *, burst: bool = False, handle_signals: bool = False) -> None:
        """Run the worker on the current loop.

        Args:
            burst: return once the queue holds no runnable job and nothing is active.
            handle_signals: SIGTERM/SIGINT close gracefully; a second signal stops at once.
        """
        self._wake = asyncio.Event()
        self._slot_freed = asyncio.Event()
        self._pipe = AutoPipeline(self.queue.aclient, self.queue.ascripts)
        self._executor = JobThreads(self.opts.concurrency, f"bullq-{self.queue.name}")
        if handle_signals:
            stop = SignalStop(self.close, self.opts.grace_period_s, lambda: self._closing)
            stop.install(asyncio.get_running_loop())
        self._checkpoint(0)
        self._started_ms = now_ms()
        self._timers = self._start_duties()
        if self.opts.listen_control:
            self._timers.append(asyncio.create_task(listen_control(self)))
        try:
            # Name the blocking connection now, as Node does, so dashboards (Node getWorkers())
            # list a worker that is busy from its first fetch and never blocks on the marker.
            await self._blocking_client()
            await self._main_loop(burst=burst)
            await self._drain_slots()
        finally:
            for timer in self._timers:
                timer.cancel()
            await asyncio.gather(*self._timers, return_exceptions=True)
            await self._last_flush()
            with contextlib.suppress(Exception):
                await heartbeat.aforget(self.queue.aclient, self.queue.keys, self.heartbeat_name)
            await self._close_blocking()
            with contextlib.suppress(Exception):
                await self._pipe.aclose()
            self._executor.shutdown(wait=not self._force)

    def close(self, *, force: bool = False) -> None:
        """Stop fetching; active jobs finish (``force``: hand them back to wait at once).

        Safe to call from a signal handler on the loop's thread.
        """
        self._closing = True
        self._force = self._force or force
        if self._wake is not None:
            self._wake.set()
        if self._block_task is not None:
            self._block_task.cancel()

    async def pause(self) -> None:
        """Stop fetching and wait until active jobs are done (BullMQ ``worker.pause()``)."""
        self._paused_locally = True
        if self._block_task is not None:
            self._block_task.cancel()
        while self._slots:
            await asyncio.wait(set(self._slots))

    def resume(self) -> None:
        """Fetch again after :meth:`pause`."""
        self._paused_locally = False
        if self._wake is not None:
            self._wake.set()

    def cancel_job(self, job_id: str, reason: str = "", *, unrecoverable: bool = False) -> bool:
        """Cancel a job running on this worker (BullMQ ``worker.cancelJob``).

        An ``async def`` processor gets ``asyncio.CancelledError`` at its current ``await``; a
        sync one sees ``job.cancelled`` become True (it must check). The attempt then fails with
        ``failedReason`` ``"cancelled: <reason>"`` and is retried per its ``attempts`` unless
        ``unrecoverable``. Thread-safe. See docs/cancellation.md.

        Args:
            job_id: the job's id. reason: text for the failedReason.
            unrecoverable: fail without retrying (like ``UnrecoverableError``).

        Returns:
            True when the job was running here and is now cancelled; False otherwise.
        """
        token = self._cancel_tokens.get(str(job_id))
        return token is not None and token.cancel(reason, unrecoverable=unrecoverable)

    def cancel_all_jobs(self, reason: str = "", *, unrecoverable: bool = False) -> int:
        """Cancel every job running on this worker (BullMQ ``cancelAllJobs``); returns how many."""
        return sum(
            token.cancel(reason, unrecoverable=unrecoverable)
            for token in list(self._cancel_tokens.values())
        )

    @property
    def client_name(self) -> str:
        """Connection name by which dashboards list workers.

        BullMQ's shape: ``<prefix>:<base64(queue)>[:w:<name>]``.
        """
        encoded = base64.b64encode(self.queue.name.encode()).decode()
        base = f"{self.queue.prefix}:{encoded}"
        return f"{base}:w:{self.opts.name}" if self.opts.name else base

    # --- main loop -------------------------------------------------------------------------

    async def _main_loop(self, *, burst: bool) -> None:
        failures = 0
        while not self._closing:
            self._checkpoint(0)
            if await self._held_back():
                continue
            try:
                started, rate_ttl, due = await self._fetch_into_slots()
                if outages.down:  # Redis answered: an outage logged before is over
                    outages.reached(self.queue.connection.address())
                failures = 0
            except Exception as exc:  # connection trouble must never end a long-running loop
                failures += 1
                if burst and failures >= BURST_MAX_FAILURES:
                    # A burst run (cron, CI) reports the outage instead of hanging.
                    raise
                await self._backoff_after_error("fetch", exc, failures)
                continue
            if started:
                continue
            if rate_ttl > 0:
                await self._sleep_unless_woken(min(rate_ttl / 1000, MAX_RATE_LIMIT_WAIT_S))
                continue
            if burst:
                if not self._slots:
                    return
                await self._wait_slot()
                continue
            failures = await self._wait_for_work(due, failures)

    async def _held_back(self) -> bool:
        """Wait out what keeps this worker from fetching now (paused here, every slot busy, a
        rate limit this process hit); True when it waited, so the loop looks again."""
        assert self._wake is not None
        if self._paused_locally:
            self._loop_deadline = math.inf  # paused on purpose: alive, not stuck
            self._wake.clear()
            await self._wake.wait()
            return True
        if len(self._slots) >= self.opts.concurrency:
            await self._wait_slot()
            return True
        limited = self._limit_until - asyncio.get_running_loop().time()
        if limited > 0:
            await self._sleep_unless_woken(min(limited, MAX_RATE_LIMIT_WAIT_S))
            return True
        return False

    async def _wait_for_work(self, due_ms: float, failures: int) -> int:
        """Block on the queue's marker until a job may be ready (at the latest ``due_ms``, when
        the next delayed job is due, epoch ms; 0 = none); returns the new count of consecutive
        failures."""
        try:
            await self._wait_for_marker(due_ms if due_ms > 0 else 0.0)
        except asyncio.CancelledError:
            if not (self._closing or self._paused_locally):
                raise
            return failures
        except Exception as exc:  # noqa: BLE001 - logged by _backoff_after_error; go on
            await self._backoff_after_error("marker wait", exc, failures + 1)
            return failures + 1
        return 0

    async def _wait_slot(self) -> None:
        """Wait until a slot task ends (bounded, so closing is noticed)."""
        assert self._slot_freed is not None
        self._slot_freed.clear()
        if self._slots:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._slot_freed.wait(), 1.0)

    async def _sleep_unless_woken(self, seconds: float) -> None:
        assert self._wake is not None
        self._checkpoint(seconds)
        self._wake.clear()
        if self._closing:  # close() came while the caller awaited (a fetch): its wake-up is gone
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wake.wait(), seconds)

    async def _backoff_after_error(self, what: str, exc: BaseException, failures: int) -> None:
        delay = min(0.1 * 2 ** min(failures, 6), 5.0)
        if is_outage(exc):  # one line per outage (core/worker/outage.py)
            outages.failed(self.queue.connection.address(), exc, consecutive=failures)
        else:
            logger.warning(
                "worker %s: %s failed (%s: %s); retrying in %.1f s",
                self.queue.name,
                what,
                type(exc).__name__,
                exc,
                delay,
            )
        await self._reset_blocking()
        await self._sleep_unless_woken(delay)

    def _next_token(self) -> str:
        self._token_seq += 1
        return f"{self.id}:{self._token_seq}"

    def _fetch_call(self, token: str) -> calls.Call[Any]:
        return calls.move_to_active(
            self.queue.keys,
            token=token,
            lock_duration=self.opts.lock_duration,
            now=now_ms(),
            limiter_max=self.opts.limiter_max,
            limiter_duration=self.opts.limiter_duration,
            worker_name=self.opts.name,
        )

    async def _fetch_into_slots(self) -> tuple[int, int, float]:
        """Fetch up to ``_fetch_batch`` jobs in one write and start a slot for each.

        Returns:
            (jobs started, rate-limit ttl ms, next due ms), the last two from a fetch that
            found no job. Raises the first fetch error when no fetch succeeded.
        """
        free = self.opts.concurrency - len(self._slots)
        wanted = max(1, min(self._fetch_batch, free))
        replies = await asyncio.gather(
            *(self._fetch() for _ in range(wanted)), return_exceptions=True
        )
        started, rate_ttl, due = 0, 0, 0.0
        error: BaseException | None = None
        for reply in replies:
            if isinstance(reply, BaseException):
                error = error or reply
                continue
            job, ttl, next_due = reply
            if job is not None:
                self._start_slot(job)  # every fetched job runs, whatever the others met
                started += 1
            elif not rate_ttl and not due:
                rate_ttl, due = ttl, next_due
        if started == wanted:
            self._fetch_batch = min(2 * wanted, self.opts.concurrency)
        else:
            self._fetch_batch = 1
        if not started and error is not None:
            raise error
        return started, rate_ttl, due

    async def _fetch(self) -> tuple[Job | None, int, float]:
        token = self._next_token()
        try:
            reply = await asyncio.wait_for(
                self._pipeline.call(self._fetch_call(token)), FETCH_TIMEOUT_S
            )
        except TimeoutError:
            # a cut network that never answers: the next fetch goes out on a new connection
            await self._pipeline.reset(f"no reply to a fetch within {FETCH_TIMEOUT_S} s")
            raise
        return self._parse_fetch(reply, token)

    async def _wait_for_marker(self, block_until: float) -> None:
        """Block on ``BZPOPMIN marker`` until a job is ready, ``block_until`` ms, or drain delay."""
        while not self._closing:
            now = now_ms()
            if block_until and block_until <= now:
                return
            timeout = self.opts.drain_delay
            if block_until:
                timeout = min((block_until - now) / 1000, MAX_BLOCK_S)
            timeout = max(timeout, 0.001)
            client = await self._blocking_client()
            self._checkpoint(timeout + 5.0)  # the blocking client's socket timeout is longer
            self._block_task = asyncio.create_task(
                client.bzpopmin(self.queue.keys["marker"], timeout=timeout)
            )
            try:
                popped = await self._block_task
            finally:
                self._block_task = None
            if not popped:
                return
            score = parse_score(popped[2])
            if score <= now_ms():
                return
            block_until = score if not block_until else min(block_until, score)

    async def _blocking_client(self) -> Any:
        if self._blocking is None:
            longest_block = max(self.opts.drain_delay, MAX_BLOCK_S)
            self._blocking = self.queue.connection.new_blocking_client(longest_block + 5.0)
            with contextlib.suppress(Exception):
                await self._blocking.client_setname(self.client_name)
        return self._blocking

    async def _reset_blocking(self) -> None:
        await self._close_blocking()
        self._blocking = None

    async def _close_blocking(self) -> None:
        if self._blocking is not None:
            with contextlib.suppress(Exception):
                await self._blocking.aclose()

    # --- running jobs ----------------------------------------------------------------------

    def _start_slot(self, job: Job) -> None:
        task = asyncio.create_task(self._slot(job))
        self._slots.add(task)
        task.add_done_callback(self._slot_done)

    def _slot_done(self, task: asyncio.Task[None]) -> None:
        self._slots.discard(task)
        if self._slot_freed is not None:
            self._slot_freed.set()
        if not task.cancelled() and task.exception() is not None:
            logger.error("worker %s: slot crashed: %r", self.queue.name, task.exception())

    async def _slot(self, job: Job | None) -> None:
        """One concurrency slot: run a job, and the next one its finish call fetched, and so on."""
        while job is not None:
            job = await self._process(job)
            if job is not None and (self._closing or self._paused_locally):
                # The finish call fetched it as the worker was stopping: hand it back now,
                # not when its lock expires (that would count a stall and delay it by a lock).
                await self._hand_back(job)
                break

    async def _process(self, job: Job) -> Job | None:
        """Run one job and finish it; returns the next job fetched by the finish call, if any."""
        current_id = job.id
        self._running[current_id] = job
        attempt = (  # instrumentations watching: one `if` on empty tuples when there are none
            instrument.Attempt(instrument.active(self.instrumentations), self, job)
            if self.instrumentations or instrument.GLOBAL.hooks
            else None
        )
        try:
            await aschedule_next(self.queue, job)  # BullMQ: next iteration on activation
            reason = self._refuse_reason(job)
            if reason is not None:
                return await self._refuse(job, reason, attempt)
            try:
                result = await self._call_cancellable(job)
                # None (a task that returns nothing) is the common case: its JSON is known
                value = (
                    "null"
                    if result is None
                    else dumps(result, f"return value of job {job.id} ({job.name!r})")
                )
            except WaitingChildrenError:
                if attempt is not None:
                    attempt.end(instrument.WAITING_CHILDREN)
                return None  # the task moved its job to waiting-children itself
            except Exception as exc:  # noqa: BLE001 - every task error fails the attempt only
                if attempt is not None:
                    attempt.error = exc
                if isinstance(exc, RateLimitError) or failed_reason(exc) == RATE_LIMIT_ERROR:
                    await self._move_limited_back(job, attempt)
                    return None
                return await self._handle_failure(job, drop_worker_frames(exc), attempt)
            return await self._finish(job, "completed", value, attempt=attempt)
        except ScriptError as exc:
            logger.warning(
                "worker %s: job %s could not be finished: %s", self.queue.name, current_id, exc
            )
        except Exception:
            logger.exception("worker %s: job %s could not be finished", self.queue.name, current_id)
        finally:
            self._running.pop(current_id, None)
            if attempt is not None:
                attempt.end(instrument.LOST)  # nothing when it ended above
        return None

    # --- rate limiting (protocol §5.12) ----------------------------------------------------

    def rate_limit(self, ms: int) -> None:
        """Rate-limit this worker's queue for ``ms`` ms (BullMQ ``Worker.rateLimit``).

        Call it from a processor, then raise :class:`RateLimitError`: the job goes back to the
        front of wait without spending an attempt and this worker fetches nothing until the
        limit expires. Other workers honour it when they have a limiter (``limiter_max`` or a
        global rate limit), as in BullMQ.

        Raises:
            ValueError: ``ms`` not an int >= 1.
        """
        self.queue.rate_limit(ms)

    async def arate_limit(self, ms: int) -> None:
        """Async twin of :meth:`rate_limit` (for ``async def`` processors)."""
        await self.queue.arate_limit(ms)

    # --- shutdown --------------------------------------------------------------------------

    async def _drain_slots(self) -> None:
        """Give active jobs the grace period, then hand unfinished ones back to wait."""
        if not self._slots:
            return
        if not self._force:
            assert self._wake is not None
            deadline = asyncio.get_running_loop().time() + self.opts.grace_period_s
            # _wake is set again by close(force=True): a second signal ends the grace period.
            while self._slots and not self._force:
                remaining = deadline - asyncio.get_running_loop().time()
                if remaining <= 0:
                    break
                self._wake.clear()
                woken = asyncio.create_task(self._wake.wait())
                await asyncio.wait(
                    {*self._slots, woken}, timeout=remaining, return_when=asyncio.FIRST_COMPLETED
                )
                woken.cancel()
        if self._slots:
            # Grace expired: the executor shutdown must not block the loop on job threads.
            self._force = True
            await self._hand_back_running()
            for task in list(self._slots):
                task.cancel()
            await asyncio.gather(*self._slots, return_exceptions=True)

    async def _hand_back_running(self) -> None:
        for job in list(self._running.values()):
            await self._hand_back(job)


__all__ = ["JobHook", "Processor", "SerializationError", "Worker", "WorkerOptions"]
