"""Worker side of cancellation: run a processor under a :class:`CancelToken` with its timeout,
and listen on the queue's control channel (docs/cancellation.md)."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
from typing import TYPE_CHECKING, Any

from .cancel import CONTROL_SUFFIX, CancelToken, parse_control, reset_current, set_current
from .connection import is_cluster

if TYPE_CHECKING:
    from .job import Job
    from .worker.worker import Worker

logger = logging.getLogger("django_bullq.worker")

#: Seconds one ``get_message`` waits, so a closing worker notices within this time.
POLL_S = 1.0


def job_timeout_ms(job: Job) -> int:
    """The job's ``opts.timeout`` in ms (0 when absent or not a positive integer)."""
    value = job.opts.get("timeout")
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        return 0
    return int(value)


async def call_cancellable(worker: Worker, job: Job) -> Any:
    """Run ``worker``'s processor for ``job`` with a cancel token (and its timeout).

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
    worker._cancel_tokens[job.id] = token
    loop = asyncio.get_running_loop()
    timeout = job_timeout_ms(job)
    timer = loop.call_later(timeout / 1000, token.time_out, timeout) if timeout else None
    handle = set_current(token)
    try:
        if worker._is_async:
            result = await _await_bound(token, worker._call_processor(job))
        else:
            result = await loop.run_in_executor(worker._executor, _sync_call, worker, job, token)
            if inspect.isawaitable(result):
                # A sync dispatcher handing back a coroutine (the Django layer's async tasks).
                if token.cancelled:
                    _close(result)
                else:
                    result = await _await_bound(token, result)
        token.raise_if_cancelled()
        return result
    finally:
        reset_current(handle)
        if timer is not None:
            timer.cancel()
        if worker._cancel_tokens.get(job.id) is token:
            del worker._cancel_tokens[job.id]


def _sync_call(worker: Worker, job: Job, token: CancelToken) -> Any:
    handle = set_current(token)  # executor threads do not inherit the loop's context
    try:
        return worker._call_sync(job)
    finally:
        reset_current(handle)


def _close(awaitable: Any) -> None:
    if inspect.iscoroutine(awaitable):
        awaitable.close()


async def _await_bound(token: CancelToken, awaitable: Any) -> Any:
    """Await ``awaitable`` in its own task that the token cancels; turn that into its error."""
    task = asyncio.ensure_future(awaitable)
    token.bind_task(task)
    try:
        return await task
    except asyncio.CancelledError:
        current = asyncio.current_task()
        if token.error is not None and not (current is not None and current.cancelling()):
            raise token.error from None
        raise
    finally:
        token.bind_task(None)


def handle_control(worker: Worker, raw: Any) -> bool:
    """Apply one control message to ``worker``; True when it cancelled a job running here."""
    message = parse_control(raw)
    if message is None:
        logger.warning("worker %s: ignoring a malformed control message %r", worker.queue.name, raw)
        return False
    if message["action"] != "cancel":
        logger.debug("worker %s: ignoring control action %r", worker.queue.name, message["action"])
        return False
    job_id = message.get("jobId")
    if job_id is None:
        return False
    reason = message.get("reason")
    return worker.cancel_job(
        str(job_id),
        "" if reason is None else str(reason),
        unrecoverable=message.get("unrecoverable") is True,
    )


async def listen_control(worker: Worker) -> None:
    """Subscribe to ``<prefix>:<queue>:control`` on a dedicated connection until cancelled.

    On Redis Cluster the channel is a sharded one (``SSUBSCRIBE``; ``Queue.cancel_job`` sends
    ``SPUBLISH``): it lives on the node that owns the queue's hash slot.
    """
    channel = worker.queue.keys[CONTROL_SUFFIX]
    failures = 0
    while True:
        client = worker.queue.connection.new_blocking_client(POLL_S + 5.0)
        pubsub = client.pubsub()
        sharded = is_cluster(client)
        try:
            if sharded:
                await client.initialize()  # ssubscribe needs the slot map
                await pubsub.ssubscribe(channel)
            else:
                await pubsub.subscribe(channel)
            failures = 0
            while True:
                if sharded:
                    message = await pubsub.get_sharded_message(
                        ignore_subscribe_messages=True, timeout=POLL_S
                    )
                else:
                    message = await pubsub.get_message(
                        ignore_subscribe_messages=True, timeout=POLL_S
                    )
                if message is not None and message.get("type") in ("message", "smessage"):
                    handle_control(worker, message.get("data"))
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - Redis trouble: subscribe again
            failures += 1
            delay = min(0.1 * 2 ** min(failures, 6), 5.0)
            logger.warning(
                "worker %s: control channel failed (%s: %s); again in %.1f s",
                worker.queue.name,
                type(exc).__name__,
                exc,
                delay,
            )
            await asyncio.sleep(delay)
        finally:
            with contextlib.suppress(Exception):
                await pubsub.aclose()
            with contextlib.suppress(Exception):
                await client.aclose()
