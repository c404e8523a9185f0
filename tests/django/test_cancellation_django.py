"""Cancellation in the Django layer: ``@task(timeout=...)``, ``current_job().cancelled`` and a
remote ``Queue.cancel_job`` reaching an ``async def`` task run by ``runworker``'s workers."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from django_bullq import task
from django_bullq.conf import get_queue
from django_bullq.worker.dispatch import current_job
from tests.support.helpers_django import burst


@task(timeout=200, name="tests.cancellation.waits")
def waits_for_cancel() -> str:
    job = current_job()
    assert job is not None and job.cancel_token is not None
    job.cancel_token.wait(30)
    job.raise_if_cancelled()
    return "not cancelled"


@task(name="tests.cancellation.async_sleeps")
async def async_sleeps() -> str:
    await asyncio.sleep(30)
    return "slept"


def test_task_timeout_option_is_stored_and_enforced(queue_name: str) -> None:
    job = waits_for_cancel.using(queue=queue_name).enqueue()
    assert job.opts["timeout"] == 200
    started = time.monotonic()
    burst(queue_name)
    assert time.monotonic() - started < 5
    job.refresh()
    assert (job.get_state(), job.failed_reason) == ("failed", "timed out after 200 ms")


def test_using_can_change_the_timeout() -> None:
    assert waits_for_cancel.using(timeout=5000).job_options["timeout"] == 5000
    with pytest.raises(ValueError, match="timeout"):
        task(timeout=0)(lambda: None)


def test_remote_cancel_reaches_an_async_task(queue_name: str) -> None:
    job = async_sleeps.using(queue=queue_name).enqueue()
    queue = get_queue(queue_name)
    published: list[int] = []

    def cancel_when_running() -> None:
        deadline = time.monotonic() + 8
        while time.monotonic() < deadline:
            subscribed = queue.client.pubsub_numsub(queue.keys["control"])[0][1]
            if queue.get_job_state(job.id) == "active" and subscribed:
                published.append(queue.cancel_job(job.id, "admin said so"))
                return
            time.sleep(0.02)

    thread = threading.Thread(target=cancel_when_running)
    thread.start()
    started = time.monotonic()
    burst(queue_name)
    thread.join(5)
    assert published == [1]
    assert time.monotonic() - started < 8
    job.refresh()
    assert (job.get_state(), job.failed_reason) == ("failed", "cancelled: admin said so")
