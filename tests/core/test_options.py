"""Job options (django_bullq/core/options.py): validation, ms conversion, stored opts JSON."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from django_bullq.core.errors import InvalidNameError
from django_bullq.core.options import (
    PRIORITY_LIMIT,
    JobOptions,
    normalize_keep,
    now_ms,
    options_from_stored,
    to_delay_ms,
)

NOW = 1_795_994_458_434


def test_now_ms_is_the_client_clock_in_integer_ms() -> None:
    before = int(time.time() * 1000)
    value = now_ms()
    assert isinstance(value, int)
    assert before <= value <= int(time.time() * 1000)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, 0),
        (0, 0),
        (1500, 1500),
        (1500.9, 1500),
        (timedelta(seconds=2.5), 2500),
        (timedelta(milliseconds=1.6), 2),
        (timedelta(0), 0),
    ],
)
def test_to_delay_ms_numbers_and_timedeltas(value: Any, expected: int) -> None:
    assert to_delay_ms(value, NOW) == expected


def test_to_delay_ms_aware_datetimes_in_any_zone() -> None:
    due_utc = datetime.fromtimestamp((NOW + 3_600_000) / 1000, tz=UTC)
    assert to_delay_ms(due_utc, NOW) == 3_600_000
    sydney_like = due_utc.astimezone(timezone(timedelta(hours=11)))
    assert to_delay_ms(sydney_like, NOW) == 3_600_000


def test_to_delay_ms_past_datetime_gives_0() -> None:
    assert to_delay_ms(datetime.fromtimestamp((NOW - 5000) / 1000, tz=UTC), NOW) == 0


@pytest.mark.parametrize(
    "value", [datetime(2030, 1, 1), -1, -0.5, timedelta(seconds=-1), True, "1000", [1]]
)
def test_to_delay_ms_refuses(value: Any) -> None:
    with pytest.raises(ValueError):
        to_delay_ms(value, NOW)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, (-1, 0, 1000)),
        (False, (-1, 0, 1000)),
        (True, (0, 0, 1000)),
        (0, (0, 0, 1000)),
        (10, (10, 0, 1000)),
        ({"count": 5}, (5, 0, 1000)),
        ({"age": 3600}, (-1, 3600, 1000)),
        ({"count": 2, "age": 60, "limit": 50}, (2, 60, 50)),
    ],
)
def test_normalize_keep(value: Any, expected: tuple[int, int, int]) -> None:
    assert normalize_keep(value) == expected


@pytest.mark.parametrize("value", [-1, {"age": -1}, {"limit": 0}, "yes", 1.5, [1]])
def test_normalize_keep_refuses(value: Any) -> None:
    with pytest.raises(ValueError):
        normalize_keep(value)


def test_defaults_store_attempts_only() -> None:
    assert JobOptions().to_stored(0) == {"attempts": 0}


def test_every_option_in_its_stored_name() -> None:
    opts = JobOptions(
        job_id="order-1",
        priority=3,
        lifo=True,
        attempts=4,
        backoff=1000,
        remove_on_complete=True,
        remove_on_fail={"age": 60},
        timestamp=NOW,
        keep_logs=20,
        extra={"custom": "x"},
    )
    assert opts.to_stored(500) == {
        "custom": "x",
        "attempts": 4,
        "delay": 500,
        "priority": 3,
        "lifo": True,
        "jobId": "order-1",
        "backoff": {"type": "fixed", "delay": 1000},
        "removeOnComplete": True,
        "removeOnFail": {"age": 60},
        "timestamp": NOW,
        "kl": 20,
    }


def test_stored_options_read_back() -> None:
    opts = JobOptions(
        job_id="order-1",
        priority=3,
        lifo=True,
        attempts=4,
        backoff={"type": "exponential", "delay": 10},
        remove_on_complete=5,
        remove_on_fail=False,
        timestamp=NOW,
        keep_logs=2,
        extra={"custom": 1},
    )
    back = options_from_stored(opts.to_stored(250))
    assert back == JobOptions(
        job_id="order-1",
        delay=250,
        priority=3,
        lifo=True,
        attempts=4,
        backoff={"type": "exponential", "delay": 10},
        remove_on_complete=5,
        remove_on_fail=False,
        timestamp=NOW,
        keep_logs=2,
        extra={"custom": 1},
    )


def test_cjson_mangled_numbers_are_tolerated() -> None:
    # Lua cjson turns an empty array into {} and drops nulls; a number may come back as {}
    back = options_from_stored({"attempts": {}, "priority": {}, "delay": {}, "de": {"id": "k"}})
    assert (back.attempts, back.priority, back.delay) == (0, 0, None)
    assert back.extra == {"de": {"id": "k"}}


def test_merged_applies_overrides_and_refuses_unknown_names() -> None:
    base = JobOptions(attempts=3)
    assert base.merged(priority=2) == JobOptions(attempts=3, priority=2)
    assert base == JobOptions(attempts=3)  # frozen, unchanged
    with pytest.raises(TypeError, match="unknown job option"):
        base.merged(retries=3)


@pytest.mark.parametrize("priority", [0, 1, PRIORITY_LIMIT])
def test_priority_range(priority: int) -> None:
    JobOptions(priority=priority).validate()


@pytest.mark.parametrize(
    "kwargs",
    [
        {"priority": -1},
        {"priority": PRIORITY_LIMIT + 1},
        {"priority": True},
        {"priority": 1.5},
        {"attempts": -1},
        {"attempts": True},
        {"attempts": 2.0},
        {"backoff": -1},
        {"backoff": {"delay": 5}},
        {"backoff": {"type": "fixed", "jitter": 3}},
        {"remove_on_complete": -3},
        {"remove_on_fail": "x"},
        {"keep_logs": -1},
    ],
)
def test_validate_refuses(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        JobOptions(**kwargs).validate()


@pytest.mark.parametrize("job_id", ["a:b", "42", "wait"])
def test_validate_applies_the_job_id_rule(job_id: str) -> None:
    with pytest.raises(InvalidNameError):
        JobOptions(job_id=job_id).validate()


@pytest.mark.parametrize(
    "flags",
    [
        {"fail_parent_on_failure": True, "continue_parent_on_failure": True},
        {"ignore_dependency_on_failure": True, "remove_dependency_on_failure": True},
        {"fail_parent_on_failure": True, "remove_dependency_on_failure": True},
    ],
)
def test_two_parent_failure_policies_exclude_each_other(flags: dict[str, bool]) -> None:
    with pytest.raises(ValueError, match="exclude each other"):
        JobOptions(**flags).validate()


@pytest.mark.parametrize(
    "flag",
    [
        "fail_parent_on_failure",
        "continue_parent_on_failure",
        "ignore_dependency_on_failure",
        "remove_dependency_on_failure",
    ],
)
def test_one_parent_failure_policy_alone_is_valid(flag: str) -> None:
    JobOptions(**{flag: True}).validate()
    JobOptions().validate()
