"""Key names (QueueKeys) and the one naming rule for queue names and custom job ids (case B13)."""

from __future__ import annotations

import pytest
import redis

from django_bullq import Queue
from django_bullq.core.errors import InvalidNameError
from django_bullq.core.keys import SUFFIXES, QueueKeys, validate_job_id
from django_bullq.core.names import validate_queue_name


def test_key_layout() -> None:
    keys = QueueKeys("mail")
    assert keys.queue_key == "bull:mail"
    assert keys.key_prefix == "bull:mail:"
    assert keys["wait"] == "bull:mail:wait"
    assert keys["stalled-check"] == "bull:mail:stalled-check"
    assert keys.job("42") == "bull:mail:42"
    assert keys.de("order") == "bull:mail:de:order"
    assert QueueKeys("mail", prefix="{bullq}")["marker"] == "{bullq}:mail:marker"


@pytest.mark.parametrize(
    "name",
    ["mail", "q1", "123", "a-b_c.d", "test/transactions", "a#b", "ünï-cødé", "a b", "%2F", "שלום"],
)
def test_valid_queue_names(name: str) -> None:
    assert validate_queue_name(name) == name
    assert QueueKeys(name).queue_key == f"bull:{name}"


@pytest.mark.parametrize(
    "name",
    [
        "",
        "task:email",
        "parent:child",
        ":lead",
        "trail:",
        "{tag}",
        "a{b",
        "b}",
        "line\nbreak",
        "tab\t",
        "nul\x00",
    ],
)
def test_invalid_queue_names_are_refused(name: str) -> None:
    with pytest.raises(InvalidNameError):
        validate_queue_name(name)
    with pytest.raises(ValueError):  # InvalidNameError is a ValueError
        QueueKeys(name)


def test_queue_name_must_be_a_string() -> None:
    with pytest.raises(InvalidNameError):
        validate_queue_name(123)  # type: ignore[arg-type]


def test_empty_prefix_is_refused() -> None:
    with pytest.raises(InvalidNameError):
        QueueKeys("q", prefix="")


def test_queue_constructor_refuses_a_colon_up_front(redis_url: str) -> None:
    with pytest.raises(InvalidNameError, match="must not contain ':'"):
        Queue("parent:child", redis_url)


@pytest.mark.parametrize("job_id", ["order-42", "a1", "1a", "x" * 200, "é", "a{b}", "a/b"])
def test_valid_job_ids(job_id: str) -> None:
    assert validate_job_id(job_id) == job_id


@pytest.mark.parametrize("job_id", ["a:b", "a:b:c", "a:b:c:d", "custom:job:id:123", ":", "0:1"])
def test_every_colon_shape_is_refused_alike(job_id: str) -> None:
    with pytest.raises(InvalidNameError, match="must not contain ':'"):
        validate_job_id(job_id)


@pytest.mark.parametrize("job_id", ["0", "123", "007"])
def test_numeric_job_ids_are_refused(job_id: str) -> None:
    with pytest.raises(InvalidNameError, match="must not be an integer"):
        validate_job_id(job_id)


@pytest.mark.parametrize("job_id", [s for s in SUFFIXES if ":" not in s])
def test_queue_key_suffixes_are_refused_as_job_ids(job_id: str) -> None:
    with pytest.raises(InvalidNameError, match="name of a queue key"):
        validate_job_id(job_id)


def test_empty_job_id_is_refused() -> None:
    with pytest.raises(InvalidNameError):
        validate_job_id("")


@pytest.mark.parametrize("job_id", ["a:b", "123", "wait", "meta", "id"])
def test_add_refuses_bad_ids_before_touching_redis(
    queue: Queue, r: redis.Redis, job_id: str
) -> None:
    with pytest.raises(InvalidNameError):
        queue.add("x", {}, job_id=job_id)
    assert r.keys(queue.keys.key_prefix + "*") == []
