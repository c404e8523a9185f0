"""Job.from_hash: a job hash (HGETALL reply) decoded into a Job, cheaply and never raising; and
Job.added, the job a producer just added, built without the constructor as well."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from types import FrameType
from typing import Any

import pytest

from django_bullq import Job

#: A fetched no-op job as moveToFinished / moveToActive return it: a flat list of bytes.
FETCHED = [
    b"name", b"bench", b"data", b'{"i":1}', b"opts", b'{"attempts":3}', b"timestamp",
    b"1795994458434", b"delay", b"0", b"priority", b"0", b"processedOn", b"1795994458500",
    b"ats", b"1",
]  # fmt: skip


def _calls(fn: Callable[[], Any]) -> int:
    """Python function calls made while ``fn`` runs (a count, from sys.setprofile)."""
    count = 0

    def tally(frame: FrameType, event: str, arg: Any) -> None:
        nonlocal count
        if event == "call":
            count += 1

    sys.setprofile(tally)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return count


def test_fetched_job_decodes_with_few_calls() -> None:
    """The worker decodes every job it fetches: fields nobody stored cost no call, and no
    decoding is done twice (the issue-13 profile: from_hash was ~30% of a no-op job)."""
    assert _calls(lambda: Job.from_hash(None, "1", FETCHED)) <= 9  # 21 before


def test_fetched_job_fields() -> None:
    job = Job.from_hash(None, "1", FETCHED)
    assert (job.id, job.name, job.data, job.opts, job.attempts) == (
        "1",
        "bench",
        {"i": 1},
        {"attempts": 3},
        3,
    )
    assert (job.timestamp, job.delay, job.priority) == (1795994458434, 0, 0)
    assert (job.processed_on, job.finished_on, job.attempts_started, job.attempts_made) == (
        1795994458500,
        None,
        1,
        0,
    )
    assert job.returnvalue is None and job.stacktrace == [] and job.progress == 0
    assert job.parent is None and job.parent_key is None and job.corrupt is None
    assert job.raw["data"] == '{"i":1}' and job.token is None and job.cancel_token is None


def test_every_field_of_a_full_hash() -> None:
    raw = {
        "name": "n", "data": "[1]", "opts": '{"attempts":2}', "timestamp": "10", "delay": "5",
        "priority": "3", "processedOn": "11", "finishedOn": "12", "returnvalue": '{"ok":true}',
        "failedReason": "boom", "stacktrace": '["t1","t2"]', "progress": '{"p":50}',
        "atm": "2", "ats": "3", "stc": "1", "pb": "w1", "parentKey": "bull:p:9",
        "parent": '{"id":"9","queueKey":"bull:p"}', "rjk": "r", "deid": "d", "defa": "child",
    }  # fmt: skip
    job = Job.from_hash(None, "7", raw)
    assert (job.data, job.opts, job.timestamp, job.delay, job.priority) == (
        [1],
        {"attempts": 2},
        10,
        5,
        3,
    )
    assert (job.processed_on, job.finished_on, job.returnvalue) == (11, 12, {"ok": True})
    assert (job.failed_reason, job.stacktrace, job.progress) == ("boom", ["t1", "t2"], {"p": 50})
    assert (job.attempts_made, job.attempts_started, job.stalled_counter) == (2, 3, 1)
    assert (job.processed_by, job.parent_key, job.parent) == (
        "w1",
        "bull:p:9",
        {"id": "9", "queueKey": "bull:p"},
    )
    assert (job.repeat_job_key, job.deduplication_id, job.deferred_failure) == ("r", "d", "child")
    assert job.corrupt is None and job.raw == raw
    # attemptsMade (BullMQ 4's name) wins over atm; str lists decode as bytes lists do
    assert Job.from_hash(None, "7", ["attemptsMade", "4", "atm", "2"]).attempts_made == 4


def test_unset_fields_have_the_dataclass_defaults() -> None:
    """Every field of a decoded Job, stored or not, reads as a Job built by its constructor;
    mutable defaults are the job's own."""
    decoded = Job.from_hash(None, "1", [b"name", b"x", b"data", b"{}"])
    built = Job(queue=None, id="1", name="x", data={}, raw={"name": "x", "data": "{}"})
    for field in dataclasses.fields(Job):
        assert getattr(decoded, field.name) == getattr(built, field.name), field.name
    other = Job.from_hash(None, "2", [b"name", b"x", b"data", b"{}"])
    decoded.opts["k"] = 1
    decoded.stacktrace.append("t")
    assert other.opts == {} and other.stacktrace == []


def test_an_added_job_reads_as_one_built_by_the_constructor() -> None:
    # Job.added sets the default_factory fields by hand: a new one must be set there too
    added = Job.added(None, "1", "x", {"a": 1}, {"attempts": 2}, (5, 6, 7))
    built = Job(
        queue=None, id="1", name="x", data={"a": 1}, opts={"attempts": 2},
        timestamp=5, delay=6, priority=7,
    )  # fmt: skip
    for field in dataclasses.fields(Job):
        assert getattr(added, field.name) == getattr(built, field.name), field.name
    other = Job.added(None, "2", "x", None, {}, (0, 0, 0))
    added.stacktrace.append("t")
    added.raw["k"] = "v"
    assert other.stacktrace == [] and other.raw == {}


def test_corrupt_hash_gives_readable_reasons_and_never_raises() -> None:
    raw = {
        "data": "{not json", "opts": "[1]", "progress": "{", "parent": "nope",
        "returnvalue": "not json", "stacktrace": "{", "timestamp": "NaN", "delay": "1e3",
        "priority": "x", "atm": "Infinity",
    }  # fmt: skip
    job = Job.from_hash(None, "3", raw)
    assert job.corrupt is not None
    reasons = job.corrupt.split("; ")
    assert reasons[0] == "job hash has no 'name' field"
    assert reasons[1].startswith("field 'data' is not valid JSON")
    assert reasons[2].startswith("field 'progress' is not valid JSON")
    assert reasons[3].startswith("field 'parent' is not valid JSON")
    assert reasons[4] == "field 'opts' is not a JSON object"
    assert len(reasons) == 5
    assert job.opts == {} and job.returnvalue == "not json" and job.stacktrace == []
    assert (job.timestamp, job.delay, job.priority, job.attempts_made) == (0, 1000, 0, 0)
    missing = Job.from_hash(None, "4", [b"name", b"n"])
    assert missing.corrupt == "job hash has no 'data' field"
    assert Job.from_hash(None, "5", None).corrupt == (
        "job hash has no 'name' field; job hash has no 'data' field"
    )
    undecodable = Job.from_hash(None, "6", [b"name", b"\xff", b"data", b"1"])
    assert undecodable.name == "\ufffd" and undecodable.data == 1


def test_a_wrongtype_reply_reads_as_an_unreadable_job_and_other_errors_raise() -> None:
    from redis.exceptions import ResponseError

    wrong = ResponseError("WRONGTYPE Operation against a key holding the wrong kind of value")
    job = Job.from_hash(None, "7", wrong)
    assert job.id == "7" and job.raw == {}
    assert job.corrupt == f"the job key is not a hash ({wrong})"
    with pytest.raises(ResponseError, match="NOPERM"):
        Job.from_hash(None, "7", ResponseError("NOPERM this user has no permissions"))
