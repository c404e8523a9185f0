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
import inspect
import logging
import math
import signal
import traceback
import uuid
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from .. import backoff, calls, eventloop, heartbeat
from ..autopipeline import AutoPipeline
from ..cancel import CancelToken
from ..cancel_runner import call_cancellable, listen_control
from ..errors import (
    RATE_LIMIT_ERROR,
    BullqError,
    RateLimitError,
    ScriptError,
    SerializationError,
    UnrecoverableError,
    WaitingChildrenError,
)
from ..job import Job
from ..options import normalize_keep, now_ms
from ..queue import Queue
from ..scheduler import aschedule_next
from ..serialization import DEFAULT_MAX_PAYLOAD_BYTES, dumps, to_str

logger = logging.getLogger("django_bullq.worker")

Processor = Callable[[Job], Any]
#: Called in the thread that runs a sync job, before and after it (Django: close_old_connections).
JobHook = Callable[[Job], None]

MAX_BLOCK_S = 10.0
MAX_RATE_LIMIT_WAIT_S = 30.0
#: Consecutive fetch errors after which a burst run gives up (~3 s of backoff).
BURST_MAX_FAILURES = 5
#: s a fetch call may take before it is abandoned (a cut network that never answers).
FETCH_TIMEOUT_S = 20.0
#: s after which a failed periodic duty (heartbeat, lock renewal, stalled check) runs again.
DUTY_RETRY_S = 1.0
#: s of slack over a loop step's own wait before the fetch loop counts as stuck (no heartbeat).
LOOP_SLACK_S = 10.0


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkerOptions:
    """Worker settings (BullMQ ``WorkerOptions`` names in brackets). Durations in ms unless noted.

    Attributes:
        concurrency: jobs run at once [concurrency].
        lock_duration: lock TTL, ms [lockDuration]; renewed every half of it.
        stalled_interval: ms between stalled checks [stalledInterval].
        max_stalled_count: stalls allowed before a job fails [maxStalledCount].
        drain_delay: s to block on the marker when the queue is empty [drainDelay].
        limiter_max / limiter_duration: rate limit, jobs per window of ms [limiter.max/duration].
        name: worker name, written as ``pb`` and in the client name [name].
        remove_on_complete / remove_on_fail: defaults when a job's opts have none.
        max_data_bytes: jobs whose ``data`` is larger (bytes of JSON) fail without running,
            with a readable reason (jobs added by other producers); 0 = no limit.
        grace_period: s that active jobs get to finish after a stop signal.
        maintenance_interval: ms between retention sweeps of completed/failed (0 = off).
        metrics_max_data_points: per-minute completed/failed counts kept in BullMQ's metrics
            keys, 0 = off [metrics.maxDataPoints]; read them with ``Queue.get_metrics``.
        skip_lock_renewal: never renew locks [skipLockRenewal]; a job running longer than
            lock_duration is then recovered by the stalled check (case B23).
        listen_control: subscribe to ``<prefix>:<queue>:control`` so that
            ``Queue.cancel_job`` from any process cancels jobs running here.
        event_loop: the loop :meth:`Worker.run` creates: ``"auto"`` (uvloop when installed),
            ``"uvloop"`` or ``"asyncio"`` (see :mod:`django_bullq.core.eventloop`).
    """

    concurrency: int = 1
    lock_duration: int = 30_000
    stalled_interval: int = 30_000
    max_stalled_count: int = 1
    drain_delay: float = 5.0
    limiter_max: int = 0
    limiter_duration: int = 0
    name: str = ""
    remove_on_complete: Any = None
    remove_on_fail: Any = None
    max_data_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES
    grace_period: float = 30.0
    maintenance_interval: int = 30_000
    metrics_max_data_points: int = 0
    event_loop: str = "auto"
    skip_lock_renewal: bool = False
    listen_control: bool = True


class Worker:
    """Processes the jobs of one queue (BullMQ's ``Worker``).

    Args:
        queue: the :class:`Queue` to work on.
        processor: ``f(job) -> JSON value``; a coroutine function runs on the loop, a plain
            function in a thread pool. Raise to fail the attempt; raise
            :class:`UnrecoverableError` to skip remaining attempts.
        options: :class:`WorkerOptions`.
        hooks: ``(before, after)`` callables run in the job's thread around each job.
    """

    def __init__(
        self,
        queue: Queue,
        processor: Processor,
        options: WorkerOptions | None = None,
        hooks: Sequence[tuple[JobHook, JobHook]] = (),
    ) -> None:
        self.queue = queue
        self.processor = processor
        self.opts = options or WorkerOptions()
        if self.opts.concurrency < 1:
            raise ValueError("concurrency must be >= 1")
        if self.opts.limiter_max > 0 and self.opts.limiter_duration <= 0:
            raise ValueError("limiter_max needs limiter_duration > 0 (ms), as BullMQ's limiter")
        self.hooks = list(hooks)
        self.id = uuid.uuid4().hex
        self._token_seq = 0
        self._running: dict[str, Job] = {}
        self._slots: set[asyncio.Task[None]] = set()
        self._closing = False
        self._force = False
        self._paused_locally = False
        self._wake: asyncio.Event | None = None
        self._slot_freed: asyncio.Event | None = None
        self._executor: ThreadPoolExecutor | None = None
        self._blocking: Any = None
        self._block_task: asyncio.Task[Any] | None = None
        self._timers: list[asyncio.Task[None]] = []
        self._is_async = inspect.iscoroutinefunction(processor)
        self.processed = 0
        self.failed = 0
        #: monotonic time (s) before which this worker does not fetch (manual rate limit)
        self._limit_until = 0.0
        self._cancel_tokens: dict[str, CancelToken] = {}
        #: name under which the heartbeat is written (``<prefix>:<queue>:bullq:workers:<name>``)
        self.heartbeat_name = self.opts.name or heartbeat.default_name(self.id)
        #: loop time (s) by which the fetch loop must pass its next checkpoint to count as alive
        self._loop_deadline = 0.0
        self._started_ms = 0
        #: fetches sent together on the next pass of the fetch loop (doubles while they all
        #: find a job, back to 1 when one finds none: a trickle costs one fetch per job)
        self._fetch_batch = 1
        self._pipe: AutoPipeline | None = None
        #: ids of jobs whose ending call (finish, retry, delay) is on its way: their lock may
        #: be gone by the time a renewal sent beside it runs, which is no lost lock
        self._ending: set[str] = set()

    # --- public control --------------------------------------------------------------------

    def run(self, burst: bool = False, handle_signals: bool = True) -> None:
        """Run the worker on a new event loop until closed (or, with ``burst``, until idle)."""
        eventloop.run(self.arun(burst=burst, handle_signals=handle_signals), self.opts.event_loop)

    async def arun(self, burst: bool = False, handle_signals: bool = False) -> None:
        """Run the worker on the current loop.

        Args:
            burst: return once the queue holds no runnable job and nothing is active.
            handle_signals: SIGTERM/SIGINT close gracefully; a second signal stops at once.
        """
        self._wake = asyncio.Event()
        self._slot_freed = asyncio.Event()
        self._pipe = AutoPipeline(self.queue.aclient, self.queue.ascripts)
        self._executor = ThreadPoolExecutor(
            max_workers=self.opts.concurrency, thread_name_prefix=f"bullq-{self.queue.name}"
        )
        if handle_signals:
            self._install_signal_handlers()
        self._checkpoint(0)
        self._started_ms = now_ms()
        self._timers = [
            asyncio.create_task(self._every(heartbeat.INTERVAL_S, self._heartbeat, at_start=True)),
            asyncio.create_task(
                self._every(self.opts.stalled_interval / 1000, self._check_stalled, at_start=True)
            ),
        ]
        if not self.opts.skip_lock_renewal:
            self._timers.append(
                asyncio.create_task(self._every(self.opts.lock_duration / 2000, self._extend_locks))
            )
        if self.opts.listen_control:
            self._timers.append(asyncio.create_task(listen_control(self)))
        if self.opts.maintenance_interval > 0:
            self._timers.append(
                asyncio.create_task(
                    self._every(self.opts.maintenance_interval / 1000, self._enforce_retention)
                )
            )
        try:
            # Name the blocking connection now, as Node does, so dashboards (Node getWorkers())
            # list a worker that is busy from its first fetch and never blocks on the marker.
            await self._blocking_client()
            await self._main_loop(burst)
            await self._drain_slots()
        finally:
            for timer in self._timers:
                timer.cancel()
            await asyncio.gather(*self._timers, return_exceptions=True)
            with contextlib.suppress(Exception):
                await heartbeat.aforget(self.queue.aclient, self.queue.keys, self.heartbeat_name)
            await self._close_blocking()
            with contextlib.suppress(Exception):
                await self._pipe.aclose()
            self._executor.shutdown(wait=not self._force, cancel_futures=True)

    def close(self, force: bool = False) -> None:
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

    def cancel_job(self, job_id: str, reason: str = "", unrecoverable: bool = False) -> bool:
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
        return token is not None and token.cancel(reason, unrecoverable)

    def cancel_all_jobs(self, reason: str = "", unrecoverable: bool = False) -> int:
        """Cancel every job running on this worker (BullMQ ``cancelAllJobs``); returns how many."""
        return sum(
            token.cancel(reason, unrecoverable) for token in list(self._cancel_tokens.values())
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

    async def _main_loop(self, burst: bool) -> None:
        assert self._wake is not None and self._slot_freed is not None
        block_until = 0.0
        failures = 0
        while not self._closing:
            self._checkpoint(0)
            if self._paused_locally:
                self._loop_deadline = math.inf  # paused on purpose: alive, not stuck
                self._wake.clear()
                await self._wake.wait()
                continue
            if len(self._slots) >= self.opts.concurrency:
                await self._wait_slot()
                continue
            limited = self._limit_until - asyncio.get_running_loop().time()
            if limited > 0:
                await self._sleep_unless_woken(min(limited, MAX_RATE_LIMIT_WAIT_S))
                continue
            try:
                started, rate_ttl, due = await self._fetch_into_slots()
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
            block_until = due if due > 0 else 0.0
            try:
                await self._wait_for_marker(block_until)
                failures = 0
            except asyncio.CancelledError:
                if not (self._closing or self._paused_locally):
                    raise
            except Exception as exc:
                failures += 1
                await self._backoff_after_error("marker wait", exc, failures)

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
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wake.wait(), seconds)

    async def _backoff_after_error(self, what: str, exc: BaseException, failures: int) -> None:
        delay = min(0.1 * 2 ** min(failures, 6), 5.0)
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

    @property
    def _pipeline(self) -> AutoPipeline:
        """The running worker's pipeline (made by :meth:`arun`)."""
        assert self._pipe is not None, "the worker is not running"
        return self._pipe

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

    def _parse_fetch(self, reply: Any, token: str) -> tuple[Job | None, int, float]:
        """Decode BullMQ's fetch tuple: (job, rate-limit ttl ms, next due ms)."""
        if not isinstance(reply, list) or len(reply) < 4:
            return None, 0, 0.0
        fields, job_id, ttl, due = reply[0], reply[1], reply[2], reply[3]
        if job_id and job_id != 0:
            job = Job.from_hash(self.queue, to_str(job_id) or "", fields)
            job.token = token
            return job, 0, 0.0
        return None, int(ttl or 0), _parse_score(due)

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
            score = _parse_score(popped[2])
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
        try:
            await aschedule_next(self.queue, job)  # BullMQ: next iteration on activation
            reason = self._refuse_reason(job)
            if reason is not None:
                logger.error(
                    "worker %s: job %s (%s) failed without running: %s",
                    self.queue.name,
                    job.id,
                    job.name,
                    reason,
                )
                self.failed += 1
                # Keep earlier attempts' traces and add the refusal, as BullMQ appends.
                return await self._finish(job, "failed", reason, dumps([*job.stacktrace, reason]))
            try:
                result = await call_cancellable(self, job)
                value = dumps(result, f"return value of job {job.id} ({job.name!r})")
            except WaitingChildrenError:
                return None  # the task moved its job to waiting-children itself
            except Exception as exc:  # noqa: BLE001 - every task error fails the attempt only
                if isinstance(exc, RateLimitError) or _reason(exc) == RATE_LIMIT_ERROR:
                    await self._move_limited_back(job)
                    return None
                return await self._handle_failure(job, exc)
            return await self._finish(job, "completed", value)
        except ScriptError as exc:
            logger.warning(
                "worker %s: job %s could not be finished: %s", self.queue.name, current_id, exc
            )
        except Exception:  # noqa: BLE001 - Redis trouble: the stalled check recovers the job
            logger.exception("worker %s: job %s could not be finished", self.queue.name, current_id)
        finally:
            self._running.pop(current_id, None)
        return None

    def _refuse_reason(self, job: Job) -> str | None:
        """Why a fetched job must fail without running (BullMQ ``defa``, corrupt, too large)."""
        if job.deferred_failure:
            return job.deferred_failure
        if job.corrupt:
            return f"corrupt job hash: {job.corrupt}"
        size = len(job.raw.get("data", "").encode("utf-8"))
        if self.opts.max_data_bytes and size > self.opts.max_data_bytes:
            return (
                f"job data is {size} bytes, over this worker's payload limit of "
                f"{self.opts.max_data_bytes} bytes (BULLQ['MAX_PAYLOAD_BYTES'])"
            )
        return None

    async def _call_processor(self, job: Job) -> Any:
        if self._is_async:
            loop = asyncio.get_running_loop()
            if self.hooks:
                await loop.run_in_executor(self._executor, self._run_hooks, job, 0)
            try:
                return await self.processor(job)
            finally:
                if self.hooks:
                    await loop.run_in_executor(self._executor, self._run_hooks, job, 1)
        loop = asyncio.get_running_loop()
        result = await loop.run_in_executor(self._executor, self._call_sync, job)
        if inspect.isawaitable(result):
            result = await result
        return result

    def _run_hooks(self, job: Job, index: int) -> None:
        for pair in self.hooks:
            try:
                pair[index](job)
            except Exception:  # noqa: BLE001 - a hook must not decide the job's fate
                logger.exception("worker %s: job hook failed", self.queue.name)

    def _call_sync(self, job: Job) -> Any:
        self._run_hooks(job, 0)
        try:
            return self.processor(job)
        finally:
            self._run_hooks(job, 1)

    async def _handle_failure(self, job: Job, exc: BaseException) -> Job | None:
        reason = _reason(exc)
        trace = _traces(job, exc)
        final = isinstance(exc, UnrecoverableError) or type(exc).__name__ == "UnrecoverableError"
        final = final or getattr(exc, "unrecoverable", False) is True  # cancel_job(unrecoverable)
        if not final and job.attempts_made + 1 < job.attempts:
            try:
                delay = backoff.compute_delay(job.opts.get("backoff"), job.attempts_made + 1, exc)
            except (KeyError, ValueError, TypeError) as bad:
                reason = f"{reason} (no retry: unusable backoff {job.opts.get('backoff')!r}: {bad})"
                delay = -1
            if delay >= 0:
                logger.info(
                    "worker %s: job %s (%s) attempt %d failed: %s; retry in %d ms",
                    self.queue.name,
                    job.id,
                    job.name,
                    job.attempts_made + 1,
                    reason,
                    delay,
                )
                await self._retry(job, delay, reason, trace)
                return None
        # The formatted trace, not exc_info: a log record holding the traceback would keep
        # the job's frames (and e.g. its database connection) alive.
        logger.error(
            "worker %s: job %s (%s) failed after %d attempt(s): %s\n%s",
            self.queue.name,
            job.id,
            job.name,
            job.attempts_made + 1,
            reason,
            trace[-1] if trace else "",
        )
        self.failed += 1
        return await self._finish(job, "failed", reason, dumps(trace))

    async def _retry(self, job: Job, delay: int, reason: str, trace: list[str]) -> None:
        keys, token, trace_text = self.queue.keys, job.token or "0", dumps(trace)
        if delay > 0:
            call = calls.move_to_delayed(
                keys,
                job_id=job.id,
                now=now_ms(),
                delay=delay,
                token=token,
                skip_attempt=False,
                failed_reason=reason,
                stacktrace=trace_text,
            )
        else:
            call = calls.retry_job(
                keys,
                job_id=job.id,
                now=now_ms(),
                token=token,
                failed_reason=reason,
                stacktrace=trace_text,
            )
        await self._settle(call, job.id)

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
            except (RedisConnectionError, RedisTimeoutError, OSError) as exc:
                failures += 1
                delay = min(0.05 * 2**failures, 1.0)
                if loop.time() + delay >= deadline:
                    raise
                logger.warning(
                    "worker %s: %s of job %s failed (%s); retrying in %.2f s",
                    self.queue.name,
                    call.script,
                    job_id,
                    exc,
                    delay,
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

    async def _finish(self, job: Job, target: str, value: str, stacktrace: str = "") -> Job | None:
        count, age, limit = self._keep(job, target)
        fetch_next = not (self._closing or self._paused_locally) and (
            self._limit_until <= asyncio.get_running_loop().time()
        )
        token = job.token or "0"
        call = calls.move_to_finished(
            self.queue.keys,
            job_id=job.id,
            now=now_ms(),
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
        reply = await self._settle(call, job.id)
        if target == "completed":
            self.processed += 1
        if isinstance(reply, list):
            nxt, _, _ = self._parse_fetch(reply, token)
            return nxt
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

    async def _move_limited_back(self, job: Job) -> None:
        """The processor raised the rate-limit error: job back to wait, honour the limiter TTL."""
        q = self.queue
        ttl = await q._arun(
            calls.move_job_from_active_to_wait(q.keys, job_id=job.id, token=job.token or "0")
        )
        if isinstance(ttl, int) and ttl > 0:
            self._limit_until = asyncio.get_running_loop().time() + ttl / 1000
        logger.info(
            "worker %s: job %s (%s) rate limited; back to wait, fetching again in %d ms",
            q.name,
            job.id,
            job.name,
            ttl if isinstance(ttl, int) else 0,
        )

    # --- liveness ---------------------------------------------------------------------------

    def _checkpoint(self, wait_s: float) -> None:
        """The fetch loop is here and will pass again within ``wait_s`` s plus slack."""
        with contextlib.suppress(RuntimeError):
            self._loop_deadline = asyncio.get_running_loop().time() + wait_s + LOOP_SLACK_S

    def is_fetch_loop_alive(self) -> bool:
        """True while the fetch loop keeps passing its checkpoints (it is not stuck)."""
        return not self._closing and asyncio.get_running_loop().time() <= self._loop_deadline

    async def _heartbeat(self) -> None:
        """Write the heartbeat key, only while the fetch loop is alive (docs/reliability.md)."""
        if not self.is_fetch_loop_alive():
            if not self._closing:
                logger.warning("worker %s: fetch loop stuck; heartbeat withheld", self.queue.name)
            return
        info = {
            "queue": self.queue.name,
            "started": self._started_ms,
            "processed": self.processed,
            "failed": self.failed,
            "active": len(self._running),
            "concurrency": self.opts.concurrency,
        }
        await heartbeat.abeat(self.queue.aclient, self.queue.keys, self.heartbeat_name, info)

    # --- periodic duties -------------------------------------------------------------------

    async def _every(
        self, seconds: float, duty: Callable[[], Awaitable[None]], at_start: bool = False
    ) -> None:
        if not at_start:
            await asyncio.sleep(seconds)
        while True:
            pause = seconds
            try:
                await duty()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - periodic duties retry soon
                logger.warning("worker %s: %s failed: %s", self.queue.name, duty.__name__, exc)
                # A pooled connection that died in an outage fails its first use after it;
                # try again within a second rather than a whole interval (heartbeat, locks).
                pause = min(seconds, DUTY_RETRY_S)
            await asyncio.sleep(pause)

    async def _extend_locks(self) -> None:
        pairs: list[str] = []
        for job in list(self._running.values()):
            if job.token:
                pairs += [job.id, job.token]
        if not pairs:
            return
        q = self.queue
        # Through the pipeline, so a finish sent before this renewal is also run before it.
        lost = await self._pipeline.call(
            calls.extend_locks(q.keys, lock_duration=self.opts.lock_duration, pairs=pairs)
        )
        for raw_id in lost or []:
            job_id = to_str(raw_id) or ""
            if job_id in self._running and job_id not in self._ending:
                logger.warning("worker %s: lost the lock of job %s", q.name, job_id)

    async def _check_stalled(self) -> None:
        q = self.queue
        stalled = await q._arun(
            calls.move_stalled_jobs_to_wait(
                q.keys,
                max_stalled_count=self.opts.max_stalled_count,
                now=now_ms(),
                stalled_interval=self.opts.stalled_interval,
            )
        )
        for job_id in stalled or []:
            logger.warning(
                "worker %s: job %s stalled and was moved back to wait", q.name, to_str(job_id)
            )

    async def _enforce_retention(self) -> None:
        """Apply removeOnComplete/removeOnFail on quiet queues too (case B35)."""
        q = self.queue
        for target in ("completed", "failed"):
            default = (
                self.opts.remove_on_complete if target == "completed" else self.opts.remove_on_fail
            )
            count, age, limit = normalize_keep(default)
            await q._arun(
                calls.clean_finished(
                    q.keys,
                    target,
                    now=now_ms(),
                    default_count=count,
                    default_age=age,
                    limit=limit,
                    opts_field="removeOnComplete" if target == "completed" else "removeOnFail",
                )
            )

    # --- shutdown --------------------------------------------------------------------------

    async def _drain_slots(self) -> None:
        """Give active jobs the grace period, then hand unfinished ones back to wait."""
        if not self._slots:
            return
        if not self._force:
            assert self._wake is not None
            deadline = asyncio.get_running_loop().time() + self.opts.grace_period
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
        except (BullqError, OSError) as exc:
            logger.warning("worker %s: could not hand back job %s: %s", q.name, job.id, exc)

    def _install_signal_handlers(self) -> None:
        loop = asyncio.get_running_loop()

        def on_signal(signum: int) -> None:
            if self._closing:
                logger.warning("second signal: stopping at once")
                self.close(force=True)
            else:
                logger.info(
                    "signal %s: finishing active jobs (grace %.0f s)",
                    signal.Signals(signum).name,
                    self.opts.grace_period,
                )
                self.close()

        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, on_signal, sig)


def _parse_score(value: Any) -> float:
    """A marker / due-time score as float ms; accepts what any BullMQ writes (may be fractional)."""
    try:
        return float(to_str(value) or 0)
    except (TypeError, ValueError):
        return 0.0


def _reason(exc: BaseException) -> str:
    try:
        text = str(exc)
    except Exception:  # noqa: BLE001 - an exception whose __str__ fails
        text = ""
    # BullMQ stores the error message alone (Node err.message, Python str(err))
    return text or type(exc).__name__


def _stacktrace(exc: BaseException) -> list[str]:
    try:
        return ["".join(traceback.format_exception(exc))[-8000:]]
    except Exception:  # noqa: BLE001
        return [repr(exc)]


def _traces(job: Job, exc: BaseException) -> list[str]:
    """The job's ``stacktrace`` after this failed attempt: one entry per failed attempt, the
    newest last, trimmed to ``opts.stackTraceLimit`` (0 keeps none), as Node and PyPI BullMQ do."""
    traces = [*job.stacktrace, *_stacktrace(exc)]
    limit = job.opts.get("stackTraceLimit")
    if isinstance(limit, int) and not isinstance(limit, bool) and limit >= 0:
        traces = traces[-limit:] if limit else []
    return traces


__all__ = ["Worker", "WorkerOptions", "SerializationError"]
