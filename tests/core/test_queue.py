"""Queue and Job API (sync and async twins) against a real Redis."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import redis

from django_bullq import Job, JobOptions, Queue
from django_bullq.core.errors import (
    BullqError,
    InvalidNameError,
    JobNotFound,
    JobNotInState,
    UnboundJobError,
)
from tests.support.factories import add_jobs
from tests.support.workerkit import events


def test_add_variants_route_like_bullmq(queue: Queue, r: redis.Redis) -> None:
    plain = queue.add("plain", {"a": 1})
    lifo = queue.add("lifo", {}, lifo=True)
    prio = queue.add("prio", {}, priority=5)
    later = queue.add("later", {}, delay=60_000, priority=5)  # delay wins over priority
    assert r.lrange(queue.keys["wait"], 0, -1) == [plain.id, lifo.id]
    assert r.zscore(queue.keys["prioritized"], prio.id) == 5 * 2**32 + 1
    score = r.zscore(queue.keys["delayed"], later.id)
    assert score == (later.timestamp + 60_000) * 4096
    assert queue.get_job_state(later.id) == "delayed"
    stored = r.hgetall(queue.keys.job(plain.id))
    assert stored["name"] == "plain" and stored["data"] == '{"a":1}'
    assert stored["opts"] == '{"attempts":0}'
    assert {e["event"] for e in events(r, queue)} >= {"added", "waiting", "delayed"}


def test_get_jobs_order_and_counts(queue: Queue) -> None:
    jobs = add_jobs(queue, 25)
    assert queue.count() == 25
    newest_first = queue.get_job_ids("waiting")
    assert newest_first[0] == jobs[-1].id
    oldest_first = queue.get_job_ids("waiting", asc=True, start=0, end=4)
    assert oldest_first == [j.id for j in jobs[:5]]
    assert [j.name for j in queue.get_jobs("waiting", asc=True)][:2] == [jobs[0].name, jobs[1].name]


def test_duplicate_custom_id_returns_existing_job(queue: Queue, r: redis.Redis) -> None:
    first = queue.add("x", {"v": 1}, job_id="order-1")
    again = queue.add("x", {"v": 2}, job_id="order-1")
    assert again.id == first.id == "order-1"
    assert queue.get_job("order-1").data == {"v": 1}
    assert events(r, queue, "duplicated")[0]["jobId"] == "order-1"


@pytest.mark.parametrize("bad", ["a:b", "a:b:c", "a:b:c:d", "123", "0", ""])
def test_case_b13_colon_and_numeric_ids_rejected_up_front(queue: Queue, bad: str) -> None:
    with pytest.raises(InvalidNameError):
        queue.add("x", {}, job_id=bad)
    assert queue.count() == 0


@pytest.mark.parametrize("name", ["task:email", "a{b}", ""])
def test_case_b13_bad_queue_names_rejected(redis_url: str, name: str) -> None:
    with pytest.raises(InvalidNameError):
        Queue(name, redis_url)


def test_delay_as_timedelta_and_aware_datetime(queue: Queue, r: redis.Redis) -> None:
    job = queue.add("t", {}, delay=timedelta(seconds=10))
    assert r.zscore(queue.keys["delayed"], job.id) == (job.timestamp + 10_000) * 4096
    at = datetime.now(UTC) + timedelta(hours=1)
    job2 = queue.add("t", {}, delay=at)
    due = int(r.zscore(queue.keys["delayed"], job2.id)) // 4096
    assert abs(due - int(at.timestamp() * 1000)) <= 2
    with pytest.raises(ValueError, match="naive"):
        queue.add("t", {}, delay=datetime.now())


def test_default_job_options_apply(redis_url: str, queue_name: str) -> None:
    q = Queue(queue_name, redis_url, default_job_options=JobOptions(attempts=3, backoff=1000))
    job = q.add("x", {})
    assert job.opts == {"attempts": 3, "backoff": {"type": "fixed", "delay": 1000}}
    assert q.add("y", {}, attempts=5).opts["attempts"] == 5


def test_pause_resume_promote_remove(queue: Queue, r: redis.Redis) -> None:
    queue.pause()
    assert queue.is_paused()
    queue.add("x", {})
    assert r.exists(queue.keys["marker"]) == 0  # no wake-up while paused
    queue.resume()
    assert not queue.is_paused()
    assert r.zscore(queue.keys["marker"], "0") == 0
    later = queue.add("later", {}, delay=60_000)
    later.promote()
    assert later.get_state() == "waiting"
    with pytest.raises(JobNotInState):
        later.promote()
    assert later.remove() is True
    assert queue.get_job(later.id) is None
    with pytest.raises(JobNotFound):
        queue.remove(later.id)


def test_progress_and_logs(queue: Queue, r: redis.Redis) -> None:
    job = queue.add("x", {}, keep_logs=2)
    job.update_progress({"done": 3, "of": 10})
    assert queue.get_job(job.id).progress == {"done": 3, "of": 10}
    assert events(r, queue, "progress")[-1]["data"] == '{"done":3,"of":10}'
    for line in ("one", "two", "three"):
        job.log(line)
    assert job.get_logs() == ["two", "three"]


async def test_async_twins(queue: Queue) -> None:
    jobs = await queue.aadd_bulk([("x", {"i": 1}), ("y", {"i": 2}, {"priority": 2})])
    assert [j.priority for j in jobs] == [0, 2]
    counts = await queue.aget_job_counts("waiting", "prioritized")
    assert counts == {"waiting": 1, "prioritized": 1}
    assert await queue.aget_job_state(jobs[1].id) == "prioritized"
    job = await queue.aadd("z", {"k": "v"}, delay=5000)
    assert (await queue.aget_job(job.id)).data == {"k": "v"}
    await job.apromote()
    assert await job.aget_state() == "waiting"
    await job.aupdate_progress(50)
    assert await job.alog("hello") == 1
    assert await job.aget_logs() == ["hello"]
    await queue.apause()
    assert await queue.ais_paused()
    await queue.aresume()
    assert await job.aremove()
    assert [j.id for j in await queue.aget_jobs("waiting")] == [jobs[0].id]


def test_add_bulk_with_a_missing_parent_raises_and_adds_the_rest(queue: Queue) -> None:
    from django_bullq.core.errors import ParentMissing

    ghost = {"id": "no-such-parent", "queue": queue.keys.queue_key}
    with pytest.raises(ParentMissing):
        queue.add_bulk([("a", 1), ("b", 2, {"parent": ghost}), ("c", 3)])
    assert queue.get_job_counts("waiting")["waiting"] == 2


async def test_aadd_bulk_with_a_missing_parent_raises_and_adds_the_rest(queue: Queue) -> None:
    from django_bullq.core.errors import ParentMissing

    ghost = {"id": "no-such-parent", "queue": queue.keys.queue_key}
    with pytest.raises(ParentMissing):
        await queue.aadd_bulk([("a", 1), ("b", 2, {"parent": ghost}), ("c", 3)])
    assert queue.get_job_counts("waiting")["waiting"] == 2
    jobs = await queue.aadd_bulk([("d", (1, 2)), ("e", {"k": [3]})])
    assert [j.data for j in jobs] == [(1, 2), {"k": [3]}]  # what was given, as add() returns
    assert [(await queue.aget_job(j.id)).data for j in jobs] == [[1, 2], {"k": [3]}]


async def test_bulk_jobs_sharing_options_store_the_same_opts_as_single_adds(
    redis_url: str, queue_name: str
) -> None:
    from django_bullq.core.options import JobOptions

    queue = Queue(
        queue_name,
        redis_url,
        default_job_options=JobOptions(attempts=3, backoff={"type": "fixed", "delay": 50}),
    )
    single = await queue.aadd("one", {"i": 0})
    bulk = await queue.aadd_bulk(
        [("many", {"i": i}) for i in range(1, 4)] + [("other", {"i": 9}, {"priority": 2})]
    )
    raw = [await queue.aclient.hget(queue.keys.job(j.id), "opts") for j in [single, *bulk]]
    assert len(set(raw[:4])) == 1  # one options object: one stored JSON, as add() stores it
    assert b'"priority":2' in raw[4]
    bulk[0].opts["attempts"] = 99  # each Job has its own opts dict
    assert bulk[1].opts["attempts"] == 3
    with pytest.raises(ValueError):
        await queue.aadd_bulk([("ok", 1), ("bad", 2, {"attempts": -1})])
    queue.close()


def test_a_job_without_a_queue_says_so_when_asked_to_use_redis() -> None:
    """A ``Job`` built by hand (no queue) raises ``UnboundJobError``, a ``BullqError`` and,
    as before it had a class of its own, a ``RuntimeError``."""
    job = Job(queue=None, id="7")
    with pytest.raises(UnboundJobError, match="not bound to a Queue"):
        job.get_logs()
    assert issubclass(UnboundJobError, BullqError) and issubclass(UnboundJobError, RuntimeError)


async def test_get_job_fields_reads_many_jobs_in_one_call(queue: Queue) -> None:
    a = queue.add("first", {"n": 1})
    b = queue.add("second", {"n": 2})
    rows = queue.get_job_fields([a.id, "missing", b.id], ["name", "data", "nope"])
    assert rows == [[b"first", b'{"n":1}', None], None, [b"second", b'{"n":2}', None]]
    assert await queue.aget_job_fields([b.id], ["name"]) == [[b"second"]]
    assert queue.get_job_fields([], ["name"]) == []
