"""Django layer of job schedulers: BULLQ["SCHEDULERS"], check E010, runworker, Task.schedule."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.core import checks
from django.core.management import call_command
from django.test import override_settings

from django_bullq import checks as bullq_checks
from django_bullq.conf import get_queue
from django_bullq.producer.schedules import upsert_declared
from tests.testapp import tasks as sample

TASK = "tests.testapp.tasks.record_job"


def e030(schedulers: Any) -> list[str]:
    with override_settings(BULLQ={"SCHEDULERS": schedulers}):
        return [
            m.msg for m in checks.run_checks(tags=[bullq_checks.TAG]) if m.id == "django_bullq.E010"
        ]


def test_valid_schedulers_are_silent() -> None:
    assert (
        e030(
            {
                "a": {"task": TASK, "every": 1000, "args": ["k"]},
                "b": {
                    "name": "node-job",
                    "queue": "q",
                    "cron": "0 */5 * * * *",
                    "tz": "Europe/Paris",
                    "data": {"x": 1},
                    "options": {"attempts": 2},
                },
                "c": {"task": TASK, "cron": "0 9 * * 1", "kwargs": {"key": "k"}, "limit": 3},
            }
        )
        == []
    )


@pytest.mark.parametrize(
    ("entry", "words"),
    [
        ("x", "must be a dict"),
        ({"task": TASK, "args": ["k"]}, "exactly one of every"),
        ({"task": TASK, "args": ["k"], "every": 10, "cron": "* * * * *"}, "exactly one of every"),
        ({"task": "no.such.task", "every": 10}, "no task registered"),
        ({"every": 10}, "exactly one of 'task'"),
        ({"name": "n", "cron": "61 * * * *"}, "invalid cron"),
        ({"name": "n", "cron": "* * * * *", "tz": "Nowhere/City"}, "unknown time zone"),
        ({"name": "n", "every": 0}, "every must be"),
        ({"name": "n", "every": 10, "queue": "a:b"}, "must not contain"),
        ({"name": "n", "every": 10, "options": {"retries": 1}}, "retries"),
        ({"name": "n", "every": 10, "data": {1, 2}}, "JSON"),
        ({"name": "n", "every": 10, "evry": 1}, "unknown key"),
        ({"task": TASK, "every": 10, "args": [1, 2, 3]}, "too many positional arguments"),
        ({"task": TASK, "every": 10, "args": ["k"], "options": {"delay": 5}}, "cannot be set"),
        ({"task": TASK, "every": 10, "args": ["k"], "options": {"job_id": "x"}}, "cannot be set"),
        ({"name": "n", "every": 10, "options": {"bogus": 1}}, "unknown job option(s) ['bogus']"),
    ],
)
def test_bad_entries_raise_e030(entry: Any, words: str) -> None:
    messages = e030({"s": entry})
    assert len(messages) == 1 and words in messages[0], messages
    # where is said once (the trial saw "BULLQ['SCHEDULERS']['s']: BULLQ['SCHEDULERS']['s']:")
    assert messages[0].count("BULLQ['SCHEDULERS']['s']") == 1, messages


def test_schedulers_not_a_dict_is_e030() -> None:
    assert e030(["a"]) and "must be a dict" in e030(["a"])[0]


def test_upsert_declared_is_idempotent(settings: Any, queue_name: str) -> None:
    settings.BULLQ = {
        **settings.BULLQ,
        "SCHEDULERS": {
            "sync": {"task": TASK, "queue": queue_name, "every": 60_000, "args": ["k"]},
            "raw": {"name": "node-job", "queue": queue_name, "cron": "0 0 * * *", "data": [1]},
        },
    }
    assert upsert_declared() == ["sync", "raw"]
    assert upsert_declared() == ["sync", "raw"]
    queue = get_queue(queue_name)
    assert queue.get_job_schedulers_count() == 2
    pending = queue.get_job_ids("waiting", "delayed")
    assert len(pending) == 2
    sync = queue.get_job_scheduler("sync")
    assert sync is not None and sync.name == TASK
    assert sync.data == {"args": ["k"], "kwargs": {}}


def test_upsert_declared_leaves_a_scheduler_paused_in_the_admin_paused(
    settings: Any, queue_name: str, caplog: pytest.LogCaptureFixture
) -> None:
    settings.BULLQ = {
        **settings.BULLQ,
        "SCHEDULERS": {
            "sync": {"task": TASK, "queue": queue_name, "every": 60_000, "args": ["k"]},
            "raw": {"name": "node-job", "queue": queue_name, "cron": "0 0 * * *", "data": [1]},
        },
    }
    assert upsert_declared() == ["sync", "raw"]
    queue = get_queue(queue_name)
    queue.pause_job_scheduler("sync")

    with caplog.at_level("INFO", logger="django_bullq"):
        assert upsert_declared() == ["raw"]  # as runworker's next start does

    held = queue.get_job_scheduler("sync")
    assert held is not None and held.paused
    assert [i for i in queue.get_job_ids("waiting", "delayed") if "sync" in i] == []
    assert any("sync" in r.getMessage() and "paused" in r.getMessage() for r in caplog.records)


def test_runworker_upserts_and_runs_declared_scheduler(settings: Any, queue_name: str) -> None:
    key = f"calls:{queue_name}"
    settings.BULLQ = {
        **settings.BULLQ,
        "SCHEDULERS": {"tick": {"task": TASK, "queue": queue_name, "every": 60_000, "args": [key]}},
    }
    call_command("runworker", queue_name, "--burst")
    queue = get_queue(queue_name)
    ran = [x.decode() if isinstance(x, bytes) else x for x in queue.client.lrange(key, 0, -1)]
    assert len(ran) == 1 and ran[0].startswith("repeat:tick:")
    assert len(queue.get_job_ids("delayed")) == 1  # the next iteration, made on activation


def test_task_schedule_every_and_cron(queue_name: str) -> None:
    task_ = sample.record_job.using(queue=queue_name, attempts=2)
    job = task_.schedule("rec", every=5000, args=["k"])
    assert job is not None and job.name == TASK and job.data == {"args": ["k"], "kwargs": {}}
    assert job.opts["attempts"] == 2 and job.opts["repeat"]["every"] == 5000
    cron = task_.schedule("rec-cron", cron="0 0 9 * * *", tz="Europe/Paris", kwargs={"key": "k"})
    assert cron is not None and cron.opts["repeat"]["tz"] == "Europe/Paris"
    assert get_queue(queue_name).get_job_schedulers_count() == 2
    with pytest.raises(ValueError):
        task_.schedule("bad", every=5, cron="* * * * *")
    raw_job = sample.email.using(queue=queue_name).schedule("mail", every=1000, args=[{"to": "a"}])
    assert raw_job is not None and raw_job.data == {"to": "a"}


async def test_task_aschedule(queue_name: str) -> None:
    job = await sample.record_job.using(queue=queue_name).aschedule("ar", every=1000, args=["k"])
    assert job is not None and json.loads(json.dumps(job.data)) == {"args": ["k"], "kwargs": {}}
