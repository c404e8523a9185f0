"""Fuzzing with hypothesis: task arguments, hand-written job hashes, huge payloads, odd names.

Contract: no input crashes a worker; a bad job fails with a readable ``failedReason``; good jobs
next to bad ones are unaffected; a value that is not JSON is refused at enqueue with an error
that names the task. Example counts are modest so the suite stays fast.
"""

from __future__ import annotations

import asyncio
import json
import math
import uuid
from typing import Any

import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from django_bullq import Queue
from django_bullq.core.errors import InvalidNameError, PayloadTooLargeError, SerializationError
from django_bullq.core.serialization import DEFAULT_MAX_PAYLOAD_BYTES
from django_bullq.worker.dispatch import process_job
from tests.support.workerkit import make_worker, run_until
from tests.testapp import tasks as sample

pytestmark = pytest.mark.django_layer

FUZZ = settings(
    max_examples=30,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)
NOT_JSON = st.one_of(
    st.sets(st.integers(), min_size=1),
    st.binary(min_size=1),
    st.just(object()),
    st.sampled_from([math.nan, math.inf, -math.inf]),
    st.just("\ud800 lone surrogate"),
    st.just(complex(1, 2)),
    st.dictionaries(st.tuples(st.integers()), st.integers(), min_size=1),
)


# --- task arguments --------------------------------------------------------------------------


@FUZZ
@given(value=JSON)
def test_task_arguments_round_trip_through_redis(value: Any, queue_name: str) -> None:
    job = sample.configured.using(queue=queue_name).enqueue(value)
    stored = job.queue.get_job(job.id, required=True)
    assert process_job(stored) == json.loads(json.dumps(value))


@FUZZ
@given(value=NOT_JSON, keyword=st.booleans())
def test_non_json_arguments_are_refused_naming_the_task(
    value: Any, *, keyword: bool, queue_name: str
) -> None:
    task = sample.configured.using(queue=queue_name)
    with pytest.raises(SerializationError) as caught:
        task.enqueue(x=value) if keyword else task.enqueue(value)
    message = str(caught.value)
    assert "tests.testapp.tasks.configured" in message
    assert ("'x' (keyword)" if keyword else "argument 0 (positional)") in message


# --- hand-written job hashes -----------------------------------------------------------------

GOOD = {
    "name": "tests.testapp.tasks.add",
    "data": '{"args":[1,2],"kwargs":{}}',
    "opts": "{}",
    "timestamp": "1700000000000",
    "delay": "0",
    "priority": "0",
    "attemptsMade": "0",
}
JUNK = st.one_of(
    st.text(max_size=20),
    st.sampled_from(
        [
            "{",
            "[1,",
            "null",
            "NaN",
            "Infinity",
            "{}",
            "[]",
            "1e999",
            "\x00",
            "-1",
            "abc",
            '"str"',
            "true",
            "99999999999999999999999",
            '{"args":1}',
            '{"args":[1],"kwargs":[]}',
            '{"attempts":"x","backoff":{"type":"?"}}',
            '{"attempts":3,"backoff":-5}',
            '{"removeOnComplete":"yes"}',
            '{"stackTraceLimit":"many"}',
            "\udcff",
        ]
    ),
    JSON.map(lambda v: json.dumps(v)),
)
FIELDS = (
    "name",
    "data",
    "opts",
    "timestamp",
    "delay",
    "priority",
    "attemptsMade",
    "atm",
    "ats",
    "stacktrace",
    "progress",
    "parent",
    "parentKey",
    "returnvalue",
    "processedOn",
    "rjk",
    "defa",
    "deid",
)
#: One hash: for each field, keep the good value, drop it, or put junk in it.
HASHES = st.fixed_dictionaries(
    {f: st.one_of(st.just("keep"), st.just("drop"), JUNK) for f in FIELDS}
)
#: Job ids another producer could write by hand: colons, braces, spaces, unicode.
ODD_IDS = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=12)


def _write_job(r: redis.Redis, queue: Queue, job_id: str, spec: dict[str, Any]) -> None:
    fields: dict[str, str] = {}
    for key in FIELDS:
        choice = spec[key]
        if choice == "keep":
            if key in GOOD:
                fields[key] = GOOD[key]
        elif choice != "drop":
            fields[key] = choice.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    pipe = r.pipeline()
    if fields:
        pipe.hset(queue.keys.job(job_id), mapping=fields)
    pipe.lpush(queue.keys["wait"], job_id)
    pipe.zadd(queue.keys["marker"], {"0": 0})
    pipe.execute()


def _readable(reason: Any) -> bool:
    """A reason a person can read: some text, not a dump (a ``defa`` reason written by another
    producer is shown as that producer wrote it)."""
    return isinstance(reason, str) and 0 < len(reason) < 20_000


@FUZZ
@given(specs=st.lists(st.tuples(ODD_IDS, HASHES), min_size=1, max_size=6, unique_by=lambda t: t[0]))
def test_hand_written_job_hashes_never_crash_the_worker(
    specs: list[tuple[str, dict[str, Any]]], redis_url: str, r: redis.Redis
) -> None:
    queue = Queue(f"fz-{uuid.uuid4().hex[:8]}", redis_url)
    ids = [f"bad {i}:{{{job_id}}}" for i, (job_id, _) in enumerate(specs)]
    for job_id, (_, spec) in zip(ids, specs, strict=True):
        _write_job(r, queue, job_id, spec)
    good = queue.add("tests.testapp.tasks.add", {"args": [20, 22], "kwargs": {}})
    worker = make_worker(queue, process_job, concurrency=2)

    def settled() -> bool:
        return queue.get_job_counts("waiting")["waiting"] == 0 and all(
            queue.get_job_state(i)
            in ("completed", "failed", "delayed", "unknown", "waiting-children")
            for i in [*ids, good.id]
        )

    asyncio.run(run_until(worker, settled, timeout=20))
    assert queue.get_job(good.id, required=True).returnvalue == 42
    for job_id in ids:
        state = queue.get_job_state(job_id)
        if state == "failed":
            assert _readable(queue.get_job(job_id, required=True).failed_reason), job_id
    assert queue.get_job_counts("active")["active"] == 0
    queue.obliterate(force=True)
    queue.close()


# --- payload size ----------------------------------------------------------------------------


def test_oversized_arguments_are_refused_at_enqueue(settings: Any, queue_name: str) -> None:
    settings.BULLQ = {**settings.BULLQ, "MAX_PAYLOAD_BYTES": 1000}
    with pytest.raises(PayloadTooLargeError) as caught:
        sample.configured.using(queue=queue_name).enqueue("x" * 2000)
    message = str(caught.value)
    assert "tests.testapp.tasks.configured" in message
    assert "over the payload limit of 1000 bytes" in message
    assert "MAX_PAYLOAD_BYTES" in message
    assert sample.configured.using(queue=queue_name).enqueue("x" * 900).id


def test_default_limit_admits_a_5_mb_payload_and_refuses_past_it(queue: Queue) -> None:
    assert queue.max_payload_bytes == DEFAULT_MAX_PAYLOAD_BYTES
    assert queue.add("big", {"blob": "é" * (5 * 1024 * 1024 // 2)}).id  # B28's 5 MB string
    with pytest.raises(PayloadTooLargeError, match="data of job 'huge'"):
        queue.add("huge", "x" * DEFAULT_MAX_PAYLOAD_BYTES)


async def test_oversized_job_from_another_producer_fails_readably(
    redis_url: str, queue_name: str
) -> None:
    """A producer without our limit (Node BullMQ) adds a job larger than the worker's limit."""
    unlimited = Queue(queue_name, redis_url, max_payload_bytes=0)
    big = unlimited.add("tests.testapp.tasks.configured", {"args": ["x" * 3000], "kwargs": {}})
    small = unlimited.add("tests.testapp.tasks.configured", {"args": ["x"], "kwargs": {}})
    worker = make_worker(unlimited, process_job, max_data_bytes=2000)
    await run_until(
        worker,
        lambda: (
            unlimited.get_job_state(small.id) == "completed"
            and unlimited.get_job_state(big.id) == "failed"
        ),
    )
    reason = unlimited.get_job(big.id, required=True).failed_reason
    assert "over this worker's payload limit of 2000 bytes" in reason
    unlimited.close()


# --- odd queue names -------------------------------------------------------------------------


@settings(
    max_examples=15,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    name=st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=16)
)
def test_odd_queue_names_work_or_are_refused_clearly(name: str, redis_url: str) -> None:
    try:
        queue = Queue(name, redis_url)
    except InvalidNameError as exc:
        assert any(ch in name for ch in ":{}") and repr(name) in str(exc)
        return
    job = queue.add("echo", {"name": name})

    async def run() -> None:
        worker = make_worker(queue, lambda j: j.data)
        await run_until(worker, lambda: queue.get_job_state(job.id) == "completed")

    asyncio.run(run())
    assert queue.get_job(job.id, required=True).returnvalue == {"name": name}
    queue.obliterate(force=True)
    queue.close()


async def test_junk_counters_do_not_jam_the_queue(queue: Queue, r: redis.Redis) -> None:
    """Regression (found by the fuzzer): ``ats``/``atm`` holding non-integers made every fetch
    of the queue fail in Lua (HINCRBY), and ``attemptsMade: Infinity`` crashed the finish."""
    ids = []
    for n, (field, value) in enumerate(
        [("ats", "x"), ("atm", "1.5"), ("attemptsMade", "Infinity"), ("stc", "{}")]
    ):
        job_id = f"junk-{n}"
        _write_job(r, queue, job_id, {**{f: "keep" for f in FIELDS}, field: value})
        ids.append(job_id)
    good = queue.add("tests.testapp.tasks.add", {"args": [1, 1], "kwargs": {}})
    worker = make_worker(queue, process_job)
    await run_until(
        worker, lambda: all(queue.get_job_state(i) == "completed" for i in [*ids, good.id])
    )
    assert [queue.get_job(i, required=True).returnvalue for i in ids] == [3, 3, 3, 3]
