"""Running one job's processor: the thread pool, the job hooks, sync or async calls, the cancel
token and ``opts.timeout`` (docs/cancellation.md).

A processor is a coroutine function (run on the loop), a plain function (run in the thread
pool), or a :class:`Dispatcher`, which decides for each job on the loop where it runs.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import logging
from collections.abc import Callable
from typing import Any, cast

from .. import instrument
from ..cancel import CancelToken, reset_current, set_current
from ..errors import contained
from ..job import Job
from .state import WorkerState

logger = logging.getLogger("django_bullq.worker")


def job_timeout_ms(job: Job) -> int:
    """The job's ``opts.timeout`` in ms (0 when absent or not a positive integer)."""
    value = job.opts.get("timeout")
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        return 0
    return int(value)


class Execution(WorkerState):
    """The worker's job runs (a mixin of :class:`~django_bullq.core.worker.Worker`)."""

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

    async def _call_cancellable(self, job: Job) -> Any:
        """Run the processor for ``job`` with a cancel token (and its timeout).

        Returns:
            The processor's result.

        Raises:
            CancelledJobError: the job was cancelled while it ran (also when the processor
                ignored the cancellation and returned).
            JobTimeoutExceeded: the same, for the job's timeout.
            Exception: whatever the processor raises.
        """
        token = CancelToken(job.id)
        job.cancel_token = token
        self._cancel_tokens[job.id] = token
        loop = asyncio.get_running_loop()
        timeout = job_timeout_ms(job)
        timer = loop.call_later(timeout / 1000, token.time_out, timeout) if timeout else None
        handle = set_current(token)
        try:
            if self._route is not None:
                result = await self._call_routed(job, token)
            elif self._is_async:
                result = await _await_bound(token, self._call_processor(job))
            else:
                call = functools.partial(self.processor, job)
                result = await self._in_thread(job, token, call)
            token.raise_if_cancelled()
            return result
        finally:
            reset_current(handle)
            if timer is not None:
                timer.cancel()
            if self._cancel_tokens.get(job.id) is token:
                del self._cancel_tokens[job.id]

    async def _call_routed(self, job: Job, token: CancelToken) -> Any:
        """A :class:`Dispatcher`'s job: its route's callable in a thread, or its awaitable on
        the loop, with the hooks in the thread where it runs."""
        assert self._route is not None
        run = self._route(job)
        if not _awaitable(run):
            return await self._in_thread(job, token, cast("Callable[[], Any]", run))
        if token.cancelled:
            _close(run)
            return None
        hooks = self.hooks
        if hooks:
            self._run_hooks(job, 0)
        try:
            return await _await_bound(token, run)
        finally:
            if hooks:
                self._run_hooks(job, 1)

    async def _in_thread(self, job: Job, token: CancelToken, call: Callable[[], Any]) -> Any:
        """``call()`` in the thread pool between the hooks; an awaitable it returns (a sync
        dispatcher handing back a coroutine: the Django layer's async tasks) is awaited here."""
        if self.instrumentations or instrument.GLOBAL.hooks:
            # the job thread runs in a copy of this task's context (an instrumentation's
            # current span, set at the attempt's start, is the job's)
            run = contextvars.copy_context().run
            result = await self._threads.run(run, _sync_call, self, job, token, call)
        else:
            result = await self._threads.run(_sync_call, self, job, token, call)
        if _awaitable(result):
            if token.cancelled:
                _close(result)
                return None
            result = await _await_bound(token, result)
        return result

    async def _call_processor(self, job: Job) -> Any:
        """An async processor on the loop, its hooks in a job thread."""
        if self.hooks:
            await self._threads.run(self._run_hooks, job, 0)
        try:
            return await self.processor(job)
        finally:
            if self.hooks:
                await self._threads.run(self._run_hooks, job, 1)

    def _run_hooks(self, job: Job, index: int) -> None:
        for pair in self.hooks:
            try:
                pair[index](job)
            except Exception:
                logger.exception("worker %s: job hook failed", self.queue.name)

    def _call_sync(self, job: Job, call: Callable[[], Any]) -> Any:
        """``call()`` between ``job``'s hooks, in this thread."""
        if self.hooks:
            self._run_hooks(job, 0)
        try:
            return call()
        finally:
            if self.hooks:
                self._run_hooks(job, 1)


def _sync_call(worker: Execution, job: Job, token: CancelToken, call: Callable[[], Any]) -> Any:
    handle = set_current(token)  # executor threads do not inherit the loop's context
    try:
        return worker._call_sync(job, call)
    finally:
        reset_current(handle)


#: Types that are never awaitable, for the values routes and processors usually hand back.
_PLAIN = frozenset({type(None), functools.partial, str, int, float, bool, bytes, dict, list, tuple})


def _awaitable(value: Any) -> bool:
    """``inspect.isawaitable(value)``, without its ABC check (about 1 us) for plain values."""
    return type(value) not in _PLAIN and inspect.isawaitable(value)


def _close(awaitable: Any) -> None:
    if inspect.iscoroutine(awaitable):
        awaitable.close()


async def _await_bound(token: CancelToken, awaitable: Any) -> Any:
    """Await ``awaitable`` in its own task that the token cancels; turn that into its error.

    A ``CancelledError`` that is neither the token's nor a cancel of the awaiting task (the
    worker stopping) came from the job's own code: it fails the attempt as
    :class:`~django_bullq.core.errors.JobAbortedError`, as ``SystemExit`` and
    ``KeyboardInterrupt`` do (:func:`_contained`).
    """
    task = asyncio.ensure_future(_contained(awaitable))
    token.bind_task(task)
    try:
        return await task
    except asyncio.CancelledError as exc:
        current = asyncio.current_task()
        if current is not None and current.cancelling():
            raise  # the worker stops
        if token.error is not None:
            raise token.error from None
        raise contained(exc)  # noqa: B904 - its __cause__ is exc
    finally:
        token.bind_task(None)


async def _contained(awaitable: Any) -> Any:
    """Await the job's ``awaitable``; a ``SystemExit`` or ``KeyboardInterrupt`` it raises is
    re-raised as :class:`~django_bullq.core.errors.JobAbortedError` (inside the job's task:
    asyncio re-raises those two out of the event loop, stopping the worker)."""
    try:
        return await awaitable
    except (SystemExit, KeyboardInterrupt) as exc:
        raise contained(exc) from exc
