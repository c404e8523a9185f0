"""Cancellation: Worker.cancel_job, the control channel (Queue.cancel_job) and job timeouts."""

from __future__ import annotations

import asyncio
import time

import pytest
import redis

from django_bullq import Job, JobOptions, Queue
from django_bullq.core.cancel import (
    CancelToken,
    cancel_message,
    current_cancel_token,
    parse_control,
)
from django_bullq.core.errors import CancelledJobError, JobTimeoutExceeded
from tests.support.workerkit import make_worker, run_until


async def until(condition, timeout: float = 5.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.02)


def state(queue: Queue, job_id: str) -> str:
    return queue.get_job_state(job_id)


async def test_async_job_is_cancelled_at_its_await_and_retried(queue: Queue) -> None:
    started: list[int] = []
    seen: list[str] = []

    async def slow(job: Job) -> str:
        started.append(job.attempts_made)
        if job.attempts_made == 0:
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                seen.append("CancelledError")
                raise
        return "second run"

    job = queue.add("slow", {}, attempts=2)
    worker = make_worker(queue, slow)

    async def cancel_when_running() -> bool:
        await until(lambda: started == [0])
        return worker.cancel_job(job.id, "user asked")

    canceller = asyncio.ensure_future(cancel_when_running())
    await run_until(worker, lambda: state(queue, job.id) == "completed")
    assert canceller.result() is True
    assert seen == ["CancelledError"]
    got = queue.get_job(job.id)
    assert got is not None and got.returnvalue == "second run"
    assert got.attempts_made == 2 and "cancelled: user asked" in got.stacktrace[0]


async def test_sync_job_polls_the_token_and_unrecoverable_skips_retries(queue: Queue) -> None:
    started: list[str] = []

    def polling(job: Job) -> str:
        started.append(job.id)
        token = current_cancel_token()
        assert token is not None and token is job.cancel_token
        while not token.wait(0.02):
            pass
        assert job.cancelled
        job.raise_if_cancelled()
        return "unreachable"

    job = queue.add("poll", {}, attempts=3)
    worker = make_worker(queue, polling)

    async def cancel() -> None:
        await until(lambda: started == [job.id])
        assert worker.cancel_job(job.id, "stop now", unrecoverable=True)
        assert not worker.cancel_job(job.id, "twice")  # the first reason wins

    canceller = asyncio.ensure_future(cancel())
    await run_until(worker, lambda: state(queue, job.id) == "failed")
    canceller.result()
    got = queue.get_job(job.id)
    assert got is not None
    assert (got.failed_reason, got.attempts_made) == ("cancelled: stop now", 1)
    assert started == [job.id]


async def test_sync_job_that_ignores_the_token_still_fails_as_cancelled(queue: Queue) -> None:
    def stubborn(job: Job) -> str:
        time.sleep(0.4)
        return "done anyway"

    job = queue.add("stubborn", {})
    worker = make_worker(queue, stubborn)

    async def cancel() -> None:
        await until(lambda: bool(worker._cancel_tokens))
        assert worker.cancel_all_jobs("shutting down") == 1

    canceller = asyncio.ensure_future(cancel())
    await run_until(worker, lambda: state(queue, job.id) == "failed")
    canceller.result()
    assert queue.get_job(job.id).failed_reason == "cancelled: shutting down"  # type: ignore


async def test_cancel_job_of_a_job_not_running_here_is_false(queue: Queue) -> None:
    worker = make_worker(queue, lambda job: None)
    assert worker.cancel_job("nope") is False
    assert Job(queue=None, id="x").cancelled is False
    Job(queue=None, id="x").raise_if_cancelled()  # no token, no error


async def test_remote_cancel_through_the_control_channel(queue: Queue, r: redis.Redis) -> None:
    channel = queue.keys["control"]
    started: list[str] = []

    async def slow(job: Job) -> None:
        started.append(job.id)
        await asyncio.sleep(30)

    job = queue.add("slow", {})
    worker = make_worker(queue, slow)

    async def cancel() -> int:
        await until(lambda: started == [job.id] and r.pubsub_numsub(channel)[0][1] >= 1)
        r.publish(channel, "not json")  # ignored, the listener goes on
        r.publish(channel, '{"action": "pause"}')
        return await queue.acancel_job(job.id, "from elsewhere")

    canceller = asyncio.ensure_future(cancel())
    elapsed = await run_until(worker, lambda: state(queue, job.id) == "failed")
    assert canceller.result() == 1
    assert elapsed < 5
    assert queue.get_job(job.id).failed_reason == "cancelled: from elsewhere"  # type: ignore
    await until(lambda: r.pubsub_numsub(channel)[0][1] == 0)  # unsubscribed on close


def test_sync_queue_cancel_job_publishes_the_message(queue: Queue, r: redis.Redis) -> None:
    pubsub = r.pubsub()
    pubsub.subscribe(queue.keys["control"])
    assert pubsub.get_message(timeout=1)["type"] == "subscribe"  # type: ignore[index]
    assert queue.cancel_job("7", "why", unrecoverable=True) == 1
    message = pubsub.get_message(timeout=1)
    pubsub.close()
    assert message is not None
    assert parse_control(message["data"]) == {
        "action": "cancel",
        "jobId": "7",
        "reason": "why",
        "unrecoverable": True,
    }
    assert cancel_message("8") == '{"action":"cancel","jobId":"8","reason":""}'


async def test_listen_control_can_be_switched_off(queue: Queue, r: redis.Redis) -> None:
    worker = make_worker(queue, lambda job: None, listen_control=False)
    task = asyncio.ensure_future(worker.arun())
    await asyncio.sleep(0.3)
    assert r.pubsub_numsub(queue.keys["control"])[0][1] == 0
    worker.close()
    await asyncio.wait_for(task, 5)


async def test_timeout_cancels_an_async_job(queue: Queue) -> None:
    async def slow(job: Job) -> None:
        await asyncio.sleep(30)

    job = queue.add("slow", {}, timeout=200, attempts=2)
    assert job.opts["timeout"] == 200
    worker = make_worker(queue, slow)
    elapsed = await run_until(worker, lambda: state(queue, job.id) == "failed")
    assert elapsed < 3
    got = queue.get_job(job.id)
    assert got is not None
    assert (got.failed_reason, got.attempts_made) == ("timed out after 200 ms", 2)


async def test_timeout_wakes_a_sync_job_waiting_on_its_token(queue: Queue) -> None:
    errors: list[type[BaseException]] = []

    def waits(job: Job) -> None:
        assert job.cancel_token is not None
        job.cancel_token.wait(30)
        try:
            job.raise_if_cancelled()
        except CancelledJobError as exc:
            errors.append(type(exc))
            raise

    job = queue.add("waits", {}, timeout=150)
    worker = make_worker(queue, waits)
    elapsed = await run_until(worker, lambda: state(queue, job.id) == "failed")
    assert elapsed < 3 and errors == [JobTimeoutExceeded]
    assert queue.get_job(job.id).failed_reason == "timed out after 150 ms"  # type: ignore


async def test_a_job_within_its_timeout_completes(queue: Queue) -> None:
    async def quick(job: Job) -> str:
        await asyncio.sleep(0.05)
        return "ok"

    job = queue.add("quick", {}, timeout=2000)
    await run_until(make_worker(queue, quick), lambda: state(queue, job.id) == "completed")


@pytest.mark.parametrize("bad", [0, -5, 1.5, True, "100"])
def test_timeout_must_be_positive_int_ms(bad: object) -> None:
    with pytest.raises(ValueError, match="timeout"):
        JobOptions(timeout=bad).validate()  # type: ignore[arg-type]


def test_timeout_round_trips_through_stored_opts(queue: Queue) -> None:
    job = queue.add("x", {}, timeout=1500)
    got = queue.get_job(job.id)
    assert got is not None and got.options.timeout == 1500


def test_a_token_cancelled_before_anyone_waits_on_it_wakes_a_later_wait_at_once() -> None:
    token = CancelToken("j1")
    assert not token.cancelled and token.wait(0) is False
    other = CancelToken("j2")
    assert other.cancel("stop") is True and other.cancelled
    assert other.wait(30) is True  # its Event is made after the cancel: set at once
    assert token.cancel("later") is True and token.wait(30) is True  # made before the cancel
