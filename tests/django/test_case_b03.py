"""Case B03: a naive "run at" datetime is read in TIME_ZONE with the offset of *that* instant."""

from __future__ import annotations

from datetime import datetime, timedelta
from datetime import timezone as dt_timezone
from zoneinfo import ZoneInfo

import pytest
from django.test import override_settings
from django.utils import timezone

from django_bullq.conf import get_queue
from tests.testapp import tasks as sample

ZONES = ["UTC", "Europe/London", "America/New_York", "Australia/Sydney", "Pacific/Auckland"]
SEASONS = [(1, 15), (7, 15)]  # January and July of next year: always in the future


def stored_due_ms(queue_name: str, job_id: str) -> int:
    """The due time the delayed set holds (score = due ms * 4096 + sequence)."""
    score = get_queue(queue_name).client.zscore(get_queue(queue_name).keys["delayed"], job_id)
    assert score is not None, "job is not in the delayed set"
    return int(score) // 4096


@pytest.mark.parametrize("zone", ZONES)
@pytest.mark.parametrize(("month", "day"), SEASONS)
def test_case_b03_naive_run_at_is_the_intended_instant(
    queue_name: str, zone: str, month: int, day: int
) -> None:
    year = datetime.now().year + 1
    naive = datetime(year, month, day, 9, 30)
    intended = naive.replace(tzinfo=ZoneInfo(zone))  # zoneinfo: the offset in effect then
    with override_settings(TIME_ZONE=zone):
        job = sample.add.using(queue=queue_name, delay=naive).enqueue(1)
    expected_ms = int(intended.timestamp() * 1000)
    assert stored_due_ms(queue_name, job.id) - expected_ms == 0
    assert job.timestamp + job.delay == expected_ms


@pytest.mark.parametrize("zone", ZONES)
def test_case_b03_naive_now_plus_one_hour_fires_in_one_hour(queue_name: str, zone: str) -> None:
    with override_settings(TIME_ZONE=zone):
        now = timezone.now()
        naive = timezone.localtime(now + timedelta(hours=1)).replace(tzinfo=None)
        job = sample.add.using(queue=queue_name, delay=naive).enqueue(1)
    expected_ms = int((now + timedelta(hours=1)).timestamp() * 1000)
    # the naive value carries microseconds; ms rounding may differ by one
    assert abs(stored_due_ms(queue_name, job.id) - expected_ms) <= 1
    assert 3_599_000 <= job.delay <= 3_600_001
    assert get_queue(queue_name).get_job_state(job.id) == "delayed"


def test_case_b03_aware_datetime_is_kept(queue_name: str) -> None:
    due = datetime.now(dt_timezone.utc).replace(microsecond=0) + timedelta(hours=2)
    with override_settings(TIME_ZONE="Australia/Sydney"):
        job = sample.add.using(
            queue=queue_name, delay=due.astimezone(ZoneInfo("America/New_York"))
        ).enqueue(1)
    assert stored_due_ms(queue_name, job.id) == int(due.timestamp() * 1000)


def test_case_b03_naive_datetime_without_use_tz(queue_name: str) -> None:
    year = datetime.now().year + 1
    with override_settings(USE_TZ=False, TIME_ZONE="Europe/London"):
        job = sample.add.using(queue=queue_name, delay=datetime(year, 7, 1, 12, 0)).enqueue(1)
    expected = datetime(year, 7, 1, 11, 0, tzinfo=dt_timezone.utc)  # BST = UTC+1
    assert stored_due_ms(queue_name, job.id) == int(expected.timestamp() * 1000)


def test_case_b03_decorator_level_naive_datetime(queue_name: str) -> None:
    from django_bullq.producer.task import Task

    year = datetime.now().year + 1
    naive = datetime(year, 1, 10, 8, 0)
    bound = Task(
        sample.add.func, name=sample.add.name, queue=queue_name, job_options={"delay": naive}
    )
    with override_settings(TIME_ZONE="Pacific/Auckland"):
        job = bound.enqueue(1)
    expected = naive.replace(tzinfo=ZoneInfo("Pacific/Auckland"))  # NZDT, UTC+13
    assert stored_due_ms(queue_name, job.id) == int(expected.timestamp() * 1000)


def test_case_b03_ambiguous_and_skipped_wall_times(queue_name: str) -> None:
    """docs/tasks.md: a repeated wall time means the first one; a skipped one moves forward."""
    year = datetime.now().year + 1
    # last Sunday of October 01:30 happens twice in London (BST, then GMT)
    october = max(
        datetime(year, 10, d) for d in range(25, 32) if datetime(year, 10, d).weekday() == 6
    )
    march = max(datetime(year, 3, d) for d in range(25, 32) if datetime(year, 3, d).weekday() == 6)
    with override_settings(TIME_ZONE="Europe/London"):
        repeated = sample.add.using(
            queue=queue_name, delay=october.replace(hour=1, minute=30)
        ).enqueue(1)
        skipped = sample.add.using(
            queue=queue_name, delay=march.replace(hour=1, minute=30)
        ).enqueue(1)
    first = october.replace(hour=0, minute=30, tzinfo=dt_timezone.utc)  # 01:30 BST
    forward = march.replace(hour=1, minute=30, tzinfo=dt_timezone.utc)  # = 02:30 BST
    assert stored_due_ms(queue_name, repeated.id) == int(first.timestamp() * 1000)
    assert stored_due_ms(queue_name, skipped.id) == int(forward.timestamp() * 1000)
