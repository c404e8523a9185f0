"""``runworker`` start-up with cron schedulers of ``BULLQ["SCHEDULERS"]`` (issue 12, item 1): a
deploy inside the DST repeated hour, and a start whose upsert collides with a started run."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.core.management import call_command

from django_bullq import Job
from django_bullq.conf import get_queue
from django_bullq.core import scheduler as scheduler_mod
from django_bullq.core.queue import Queue
from django_bullq.core.worker import duties, outcome
from django_bullq.core.worker import worker as worker_mod
from tests.support.workerkit import make_worker, run_until

TASK = "tests.testapp.tasks.record_job"


def ms(text: str) -> int:
    return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)


class Clock:
    """The time our code reads (``now_ms`` of the scheduler and of the worker)."""

    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Iterator[Clock]:
    fake = Clock()
    monkeypatch.setattr(scheduler_mod, "now_ms", fake)
    for module in (worker_mod, outcome, duties):  # every worker module that reads the time
        monkeypatch.setattr(module, "now_ms", fake)
    yield fake


def declare(settings: Any, queue_name: str, key: str) -> None:
    settings.BULLQ = {
        **settings.BULLQ,
        "SCHEDULERS": {
            "nightly": {
                "task": TASK,
                "queue": queue_name,
                "cron": "30 1 * * *",
                "tz": "America/New_York",
                "args": [key],
                "options": {"remove_on_complete": False},
            }
        },
    }


def ran(queue: Queue, key: str) -> list[str]:
    return [x.decode() if isinstance(x, bytes) else x for x in queue.client.lrange(key, 0, -1)]


def pending(queue: Queue) -> list[str]:
    return [
        i
        for i in queue.get_job_ids("waiting", "delayed", "prioritized")
        if i.startswith("repeat:nightly:")
    ]


def start_at(clock: Clock, when: str, queue_name: str) -> None:
    """A deploy: ``runworker --burst`` starting at ``when`` (it upserts, runs what is due)."""
    clock.now = ms(when)
    call_command("runworker", queue_name, "--burst")


async def worker_at(clock: Clock, when: str, queue_name: str, key: str, runs: int) -> None:
    """A worker already running at ``when`` (no upsert) runs ``runs`` more iterations."""
    clock.now = ms(when)
    queue = get_queue(queue_name)
    target = len(ran(queue, key)) + runs

    def record(job: Job) -> None:
        queue.client.rpush(key, job.id)

    await run_until(make_worker(queue, record), lambda: len(ran(queue, key)) >= target)


async def test_runworker_starts_when_redeployed_inside_repeated_hour(
    settings: Any, queue_name: str, clock: Clock
) -> None:
    key = f"calls:{queue_name}"
    declare(settings, queue_name, key)
    await sync_to_async(start_at)(clock, "2021-11-07T04:10Z", queue_name)  # 00:10 EDT
    await worker_at(clock, "2021-11-07T05:30Z", queue_name, key, 1)  # 01:30 EDT: the run
    queue = get_queue(queue_name)
    first = f"repeat:nightly:{ms('2021-11-07T05:30Z')}"
    nxt = f"repeat:nightly:{ms('2021-11-08T06:30Z')}"
    assert ran(queue, key) == [first] and pending(queue) == [nxt]
    # 01:15 and 01:45 EST, inside the repeated hour: deploys (runs finished are kept)
    await sync_to_async(start_at)(clock, "2021-11-07T06:15Z", queue_name)
    await sync_to_async(start_at)(clock, "2021-11-07T06:45Z", queue_name)
    assert ran(queue, key) == [first] and pending(queue) == [nxt]
    await worker_at(clock, "2021-11-08T06:30Z", queue_name, key, 1)  # 01:30 EST next day
    assert ran(queue, key) == [first, nxt]
    assert pending(queue) == [f"repeat:nightly:{ms('2021-11-09T06:30Z')}"]


async def test_runworker_starts_when_its_upsert_collides_with_a_started_run(
    settings: Any, queue_name: str, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    """A host whose clock is behind starts after the run it would schedule has happened: the
    upsert takes the pattern's following run (the one already pending), nothing is doubled.
    When that one has happened too (a clock a day behind), the upsert is refused
    (SchedulerIterationExists), logged, and the worker starts anyway."""
    key = f"calls:{queue_name}"
    declare(settings, queue_name, key)
    await sync_to_async(start_at)(clock, "2021-11-07T05:29Z", queue_name)
    await worker_at(clock, "2021-11-07T05:30Z", queue_name, key, 1)
    queue = get_queue(queue_name)
    before = pending(queue)
    assert len(ran(queue, key)) == 1 and before == [f"repeat:nightly:{ms('2021-11-08T06:30Z')}"]
    await sync_to_async(start_at)(clock, "2021-11-07T05:29:30Z", queue_name)  # 30 s behind
    assert pending(queue) == before and len(ran(queue, key)) == 1
    await worker_at(clock, "2021-11-08T06:30Z", queue_name, key, 1)  # the next night's run
    after = (queue.get_job_scheduler("nightly"), pending(queue))
    with caplog.at_level(logging.WARNING, logger="django_bullq.schedules"):
        await sync_to_async(start_at)(clock, "2021-11-07T05:29:30Z", queue_name)  # a day behind
    assert (queue.get_job_scheduler("nightly"), pending(queue)) == after
    assert len(ran(queue, key)) == 2
    warned = [r.getMessage() for r in caplog.records if r.name == "django_bullq.schedules"]
    assert any("nightly" in m and "left as it is" in m for m in warned), warned
