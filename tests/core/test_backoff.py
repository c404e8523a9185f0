"""Backoff strategies (django_bullq/core/backoff.py): BullMQ's fixed and exponential, jitter."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from django_bullq.core import backoff


@pytest.fixture
def restore_strategies() -> Iterator[None]:
    saved = dict(backoff.STRATEGIES)
    yield
    backoff.STRATEGIES.clear()
    backoff.STRATEGIES.update(saved)


@pytest.mark.parametrize("attempt", [1, 2, 5, 10])
def test_fixed_is_constant(attempt: int) -> None:
    assert backoff.compute_delay({"type": "fixed", "delay": 1500}, attempt) == 1500


@pytest.mark.parametrize(("attempt", "expected"), [(1, 1000), (2, 2000), (3, 4000), (4, 8000)])
def test_exponential_doubles_from_the_base_delay(attempt: int, expected: int) -> None:
    assert backoff.compute_delay({"type": "exponential", "delay": 1000}, attempt) == expected


def test_exponential_largest_wait_of_case_b07() -> None:
    # attempts: 11 -> the 10th failure is the last to retry: 2^9 * 120000 ms
    assert backoff.compute_delay({"type": "exponential", "delay": 120_000}, 10) == 61_440_000


def test_exponential_treats_attempt_0_as_1() -> None:
    assert backoff.compute_delay({"type": "exponential", "delay": 700}, 0) == 700


@pytest.mark.parametrize("jitter", [0.1, 0.5, 1.0])
def test_fixed_jitter_stays_in_bounds(jitter: float) -> None:
    delays = {
        backoff.compute_delay({"type": "fixed", "delay": 1000, "jitter": jitter}, 1)
        for _ in range(500)
    }
    assert min(delays) >= 1000 * (1 - jitter)
    assert max(delays) < 1000
    assert len(delays) > 1  # it does vary


@pytest.mark.parametrize("jitter", [0.25, 1.0])
def test_exponential_jitter_stays_in_bounds(jitter: float) -> None:
    raw = 4 * 300  # attempt 3
    delays = [
        backoff.compute_delay({"type": "exponential", "delay": 300, "jitter": jitter}, 3)
        for _ in range(500)
    ]
    assert min(delays) >= raw * (1 - jitter)
    assert max(delays) < raw


def test_no_backoff_retries_at_once() -> None:
    assert backoff.compute_delay(None, 3) == 0
    assert backoff.compute_delay({}, 3) == 0


def test_a_bare_number_is_a_fixed_delay() -> None:
    assert backoff.compute_delay(2500, 4) == 2500
    assert backoff.compute_delay(0, 1) == 0


def test_unknown_type_raises_key_error() -> None:
    with pytest.raises(KeyError):
        backoff.compute_delay({"type": "nope", "delay": 1}, 1)


def test_custom_strategy_gets_attempts_delay_jitter_and_error(restore_strategies: None) -> None:
    seen: list[tuple[int, int, float, BaseException | None]] = []

    def linear(attempts: int, delay: int, jitter: float, error: BaseException | None) -> int:
        seen.append((attempts, delay, jitter, error))
        return attempts * delay if attempts < 3 else -1

    backoff.register("linear", linear)
    err = RuntimeError("x")
    assert backoff.compute_delay({"type": "linear", "delay": 10, "jitter": 0.5}, 2, err) == 20
    assert backoff.compute_delay({"type": "linear", "delay": 10}, 3) == -1
    assert seen == [(2, 10, 0.5, err), (3, 10, 0.0, None)]


@pytest.mark.parametrize(
    ("given", "stored"),
    [
        (None, None),
        (5000, {"type": "fixed", "delay": 5000}),
        (0, {"type": "fixed", "delay": 0}),
        (1500.9, {"type": "fixed", "delay": 1500}),
        (
            {"type": "exponential", "delay": 100, "jitter": 0.5},
            {"type": "exponential", "delay": 100, "jitter": 0.5},
        ),
        ({"type": "custom"}, {"type": "custom"}),
    ],
)
def test_normalize_gives_bullmqs_stored_shape(given: Any, stored: Any) -> None:
    assert backoff.normalize(given) == stored


def test_normalize_copies_the_dict() -> None:
    given = {"type": "fixed", "delay": 1}
    assert backoff.normalize(given) is not given


@pytest.mark.parametrize(
    "bad",
    [
        True,
        False,
        -1,
        -0.5,
        "100",
        [100],
        {"delay": 100},
        {"type": 1},
        {"type": "fixed", "delay": -5},
        {"type": "fixed", "delay": "100"},
        {"type": "fixed", "delay": True},
        {"type": "fixed", "delay": 10, "jitter": 1.5},
        {"type": "fixed", "delay": 10, "jitter": -0.1},
        {"type": "fixed", "delay": 10, "jitter": "0.5"},
    ],
)
def test_normalize_refuses_unusable_shapes(bad: Any) -> None:
    with pytest.raises(ValueError):
        backoff.normalize(bad)


def test_compute_delay_refuses_unusable_stored_shapes() -> None:
    with pytest.raises(ValueError):
        backoff.compute_delay({"type": "fixed", "delay": 100, "jitter": 2}, 1)
    with pytest.raises(ValueError):
        backoff.compute_delay("100", 1)  # type: ignore[arg-type]
