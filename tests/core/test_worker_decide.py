"""The worker's failure policy (:func:`django_bullq.core.worker.outcome.decide`), without Redis."""

from __future__ import annotations

from typing import Any

import pytest

from django_bullq.core.errors import UnrecoverableError
from django_bullq.core.job import Job
from django_bullq.core.worker.outcome import Fail, Retry, decide, failed_reason, traces


def job(attempts: int = 3, made: int = 0, **opts: Any) -> Job:
    return Job(None, "1", "task", opts={"attempts": attempts, **opts}, attempts_made=made)


def test_retries_while_attempts_remain_without_backoff_at_once() -> None:
    assert decide(job(attempts=3, made=0), ValueError("boom")) == Retry(0, "boom")
    assert decide(job(attempts=3, made=1), ValueError("boom")) == Retry(0, "boom")


def test_fails_on_the_last_attempt() -> None:
    assert decide(job(attempts=3, made=2), ValueError("boom")) == Fail("boom")
    assert decide(job(attempts=1), ValueError("boom")) == Fail("boom")


def test_fixed_and_exponential_backoff_give_the_delay() -> None:
    fixed = job(backoff={"type": "fixed", "delay": 500})
    assert decide(fixed, ValueError("x")) == Retry(500, "x")
    exponential = job(attempts=5, made=2, backoff={"type": "exponential", "delay": 100})
    assert decide(exponential, ValueError("x")) == Retry(400, "x")


def test_unrecoverable_errors_fail_at_once() -> None:
    assert decide(job(), UnrecoverableError("stop")) == Fail("stop")

    # by name, as from Node or another library
    named = type("UnrecoverableError", (Exception,), {})
    assert decide(job(), named("named")) == Fail("named")
    flagged = ValueError("cancelled: bye")
    flagged.unrecoverable = True  # type: ignore[attr-defined]
    assert decide(job(), flagged) == Fail("cancelled: bye")


def test_an_unusable_backoff_fails_and_says_why() -> None:
    verdict = decide(job(backoff={"type": "no-such-strategy"}), ValueError("x"))
    assert isinstance(verdict, Fail)
    assert verdict.reason.startswith("x (no retry: unusable backoff {'type': 'no-such-strategy'}")


@pytest.mark.parametrize(
    ("exc", "reason"), [(ValueError("msg"), "msg"), (ValueError(), "ValueError")]
)
def test_the_reason_is_the_message_or_else_the_class_name(exc: Exception, reason: str) -> None:
    assert failed_reason(exc) == reason


def test_traces_append_and_honour_the_stack_trace_limit() -> None:
    found = job(stackTraceLimit=2)
    found.stacktrace = ["one", "two"]
    assert traces(found, ValueError("three"))[0] == "two"
    assert len(traces(found, ValueError("three"))) == 2
    assert traces(job(stackTraceLimit=0), ValueError("x")) == []
