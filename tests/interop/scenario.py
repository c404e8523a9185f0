"""The job mix used by scenarios (a) and (b): one job of every add variant, with its expectations.

Added in this order to an idle queue, a worker with concurrency 1 makes its *first* attempts in
:data:`FIRST_ATTEMPT_ORDER`: ``wait`` is popped from the right (LIFO jobs were pushed there,
FIFO ones at the left), prioritized jobs run only when ``wait`` is empty (lowest priority number
first), and the delayed job runs once due. Retries come back through ``delayed`` (backoff).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django_bullq import Queue
from tests.interop.helpers import must_get

#: (key, name, data, BullMQ opts as Node / PyPI spell them)
JOBS: list[tuple[str, str, dict[str, Any], dict[str, Any]]] = [
    ("plain1", "plain", {"i": 1}, {"jobId": "plain-1"}),
    ("plain2", "plain", {"i": 2}, {}),
    ("lifo", "lifo", {"i": 3}, {"lifo": True}),
    ("prio5", "prio", {"i": 4}, {"priority": 5}),
    ("prio1", "prio", {"i": 5}, {"priority": 1}),
    (
        "retry",
        "retry",
        {"i": 6, "fail_times": 2},
        {"attempts": 3, "backoff": {"type": "exponential", "delay": 200}},
    ),
    (
        "doomed",
        "doomed",
        {"i": 7, "fail_times": 9},
        {"attempts": 2, "backoff": {"type": "fixed", "delay": 100}},
    ),
    ("delayed", "delayed", {"i": 8}, {"delay": 1000}),
    ("value", "value", {"i": 9, "result": ["a", 1, None, {"x": "a/b", "u": "é"}]}, {}),
]

FIRST_ATTEMPT_ORDER = ["lifo", "plain1", "plain2", "retry", "doomed", "value", "prio1", "prio5"]


def our_add_kwargs(opts: dict[str, Any]) -> dict[str, Any]:
    """The same options as keyword arguments of our ``Queue.add``."""
    names = {
        "jobId": "job_id",
        "lifo": "lifo",
        "priority": "priority",
        "attempts": "attempts",
        "backoff": "backoff",
        "delay": "delay",
    }
    return {names[k]: v for k, v in opts.items()}


@dataclass(frozen=True)
class Attempt:
    """One processor call as a worker reported it."""

    id: str
    attempts_made: int
    t: int


def check_outcomes(q: Queue, ids: dict[str, str], calls: list[Attempt], by: str) -> None:
    """Assert order, attempts, backoff gaps and results of the :data:`JOBS` mix.

    Args:
        q: our Queue, used to read every job back from Redis.
        ids: scenario key -> job id. calls: processor calls in the order they happened.
        by: the ``by`` tag the processing worker puts in default return values.
    """
    key_of = {v: k for k, v in ids.items()}
    assert set(key_of) == {c.id for c in calls}, "every job was run, and only those"
    first = [key_of[c.id] for c in calls if c.attempts_made == 0]
    assert [k for k in first if k != "delayed"] == FIRST_ATTEMPT_ORDER
    per_job: dict[str, list[Attempt]] = {}
    for c in calls:
        per_job.setdefault(key_of[c.id], []).append(c)
    expected_calls = {k: 1 for k in ids} | {"retry": 3, "doomed": 2}
    assert {k: [c.attempts_made for c in v] for k, v in per_job.items()} == {
        k: list(range(n)) for k, n in expected_calls.items()
    }

    jobs = {k: must_get(q, i) for k, i in ids.items()}
    # backoff: exponential 200 ms then 400 ms; fixed 100 ms
    retry = per_job["retry"]
    assert retry[1].t - retry[0].t >= 200 and retry[2].t - retry[1].t >= 400
    doomed = per_job["doomed"]
    assert doomed[1].t - doomed[0].t >= 100
    assert per_job["delayed"][0].t >= jobs["delayed"].timestamp + 1000
    assert jobs["delayed"].processed_on is not None
    assert jobs["delayed"].processed_on >= jobs["delayed"].timestamp + 1000

    for key, job in jobs.items():
        state = q.get_job_state(job.id)
        if key == "doomed":
            assert state == "failed"
            assert job.failed_reason == "fail 1"
            assert job.attempts_made == 2 and job.attempts_started == 2
            assert job.returnvalue is None
            assert job.stacktrace and "fail" in job.stacktrace[-1]
            continue
        assert state == "completed", key
        attempts = expected_calls[key]
        assert job.attempts_made == attempts, key
        assert job.attempts_started == attempts, key
        data = dict(JOBS[[j[0] for j in JOBS].index(key)][2])
        assert job.data == data
        if "result" in data:
            assert job.returnvalue == data["result"]
        else:
            assert job.returnvalue == {"by": by, "i": data["i"], "attempt": attempts - 1}, key
    assert jobs["retry"].failed_reason == "fail 1"  # BullMQ keeps the last failure's reason
    assert ids["plain1"] == "plain-1"
    assert q.get_job_counts() == {
        "completed": 8,
        "failed": 1,
        "delayed": 0,
        "prioritized": 0,
        "active": 0,
        "waiting": 0,
        "waiting-children": 0,
    }
