"""Worker side of cancellation across processes: listen on the queue's control channel and cancel
the jobs it names through ``Worker.cancel_job`` (docs/cancellation.md). Running a job under its
:class:`~django_bullq.core.cancel.CancelToken` is :mod:`django_bullq.core.worker.execution`."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING, Any

from ..cancel import CONTROL_SUFFIX, parse_control
from ..connection import is_cluster
from .outage import is_outage, outages

if TYPE_CHECKING:
    from .worker import Worker

logger = logging.getLogger("django_bullq.worker")

#: Seconds one ``get_message`` waits, so a closing worker notices within this time.
POLL_S = 1.0


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
            if is_outage(exc):  # one line per outage (outage.py)
                outages.failed(worker.queue.connection.address(), exc, consecutive=failures)
            else:
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
