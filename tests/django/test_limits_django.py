"""Django layer: ``@task(deduplication=...)``, ``tasks.rate_limit`` and the LIMITER settings."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest

from django_bullq.conf import get_queue, worker_options
from django_bullq.core.errors import BullqError, RateLimitError
from django_bullq.producer.task import task
from django_bullq.worker.dispatch import arate_limit, rate_limit
from tests.support.helpers_django import burst

CALLS: dict[str, list[float]] = {}


@task(name="tests.limits.deduplicated", deduplication={"id": "nightly-report"})
def deduplicated(n: int) -> int:
    return n


@task(name="tests.limits.limited_once")
def limited_once(key: str) -> str:
    CALLS.setdefault(key, []).append(time.monotonic())
    if len(CALLS[key]) == 1:
        rate_limit(300)
    return "done"


@task(name="tests.limits.alimited_once")
async def alimited_once(key: str) -> str:
    CALLS.setdefault(key, []).append(time.monotonic())
    if len(CALLS[key]) == 1:
        await arate_limit(300)
    return "done"


def test_task_deduplication_option_reaches_the_job(queue_name: str) -> None:
    bound = deduplicated.using(queue=queue_name)
    first = bound.enqueue(1)
    second = bound.enqueue(2)
    assert first.id == second.id  # type: ignore[union-attr]
    queue = get_queue(queue_name)
    assert queue.get_deduplication_job_id("nightly-report") == first.id  # type: ignore[union-attr]
    assert queue.count() == 1
    burst(queue_name)
    assert first.wait(timeout=5) == 1  # type: ignore[union-attr]
    third = bound.using(deduplication={"id": "other", "ttl": 1000}).enqueue(3)
    assert third.opts["de"] == {"id": "other", "ttl": 1000}  # type: ignore[union-attr]


def test_invalid_task_deduplication_is_refused_at_decoration() -> None:
    with pytest.raises(ValueError):
        task(name=f"tests.limits.bad-{uuid.uuid4().hex}", deduplication={"ttl": 5})(lambda: None)


@pytest.mark.parametrize("func", [limited_once, alimited_once])
def test_rate_limit_from_a_task_puts_the_job_back_without_an_attempt(
    queue_name: str, func: Any
) -> None:
    key = uuid.uuid4().hex
    job = func.using(queue=queue_name, attempts=1).enqueue(key)
    burst(queue_name)
    assert job.wait(timeout=5) == "done"
    calls = CALLS[key]
    assert len(calls) == 2 and calls[1] - calls[0] >= 0.25
    job.refresh()
    assert (job.attempts_made, job.attempts_started) == (1, 2)


def test_rate_limit_outside_a_task_is_an_error() -> None:
    with pytest.raises(BullqError) as info:
        rate_limit(100)
    assert not isinstance(info.value, RateLimitError)


def test_limiter_settings_reach_the_worker(settings: Any) -> None:
    settings.BULLQ = {**settings.BULLQ, "WORKER": {"LIMITER_MAX": 5, "LIMITER_DURATION": 1000}}
    opts = worker_options()
    assert (opts.limiter_max, opts.limiter_duration) == (5, 1000)


@pytest.mark.parametrize(
    "worker", [{"LIMITER_MAX": -1}, {"LIMITER_DURATION": "1s"}, {"LIMITER_MAX": True}]
)
def test_bad_limiter_settings_are_reported(worker: dict[str, Any]) -> None:
    from django.core import checks
    from django.test import override_settings

    with override_settings(BULLQ={"WORKER": worker}):
        messages = checks.run_checks()
    assert "django_bullq.E003" in [m.id for m in messages]
