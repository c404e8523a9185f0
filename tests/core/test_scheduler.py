"""Job schedulers on real Redis: upsert / read / remove, every, cron + tz, limit, dates, runs."""

from __future__ import annotations

import asyncio
import json
import time
from datetime import UTC, datetime
from typing import Any

import pytest
import redis

from django_bullq import Queue
from django_bullq.core.errors import SchedulerIteration
from django_bullq.core.scheduler import next_cron_millis
from tests.support.workerkit import events, make_worker, run_until

TEMPLATE = {"name": "tick", "data": {"t": 1}, "opts": {"attempts": 2, "remove_on_complete": 3}}


def pending(queue: Queue, scheduler_id: str) -> list[str]:
    prefix = f"repeat:{scheduler_id}:"
    ids = queue.get_job_ids("waiting", "delayed", "prioritized")
    return [i for i in ids if i.startswith(prefix)]


def test_upsert_every_stores_bullmq_hash_zset_and_one_iteration(
    queue: Queue, r: redis.Redis
) -> None:
    before = int(time.time() * 1000)
    job = queue.upsert_job_scheduler("s1", {"every": 1000}, TEMPLATE)
    assert job is not None
    millis = int(job.id.rsplit(":", 1)[1])
    assert job.id == f"repeat:s1:{millis}" and millis >= before
    h = r.hgetall(queue.keys["repeat:s1"])
    assert h == {
        "name": "tick",
        "every": "1000",
        "offset": str(millis % 1000),
        "ic": "1",
        "data": '{"t":1}',
        "opts": h["opts"],
    }
    assert json.loads(h["opts"]) == {"attempts": 2, "removeOnComplete": 3}
    assert r.zscore(queue.keys["repeat"], "s1") == millis
    raw = r.hgetall(queue.keys.job(job.id))
    assert raw["rjk"] == "s1" and raw["name"] == "tick" and raw["data"] == '{"t":1}'
    opts = json.loads(raw["opts"])
    assert opts["repeat"] == {"every": 1000, "count": 1, "offset": millis % 1000}
    assert opts["prevMillis"] == millis and opts["repeatJobKey"] == "s1"
    assert opts["jobId"] == job.id and opts["attempts"] == 2
    assert queue.get_job_state(job.id) == "waiting"
    assert [e["event"] for e in events(r, queue)][-2:] == ["added", "waiting"]


def test_get_list_count_remove(queue: Queue) -> None:
    queue.upsert_job_scheduler("a", {"every": 60_000}, {"name": "x"})
    queue.upsert_job_scheduler(
        "b", {"pattern": "0 0 * * *", "tz": "Europe/Paris"}, {"name": "y", "data": [1]}, limit=5
    )
    got = queue.get_job_scheduler("b")
    assert got is not None and got.pattern == "0 0 * * *" and got.tz == "Europe/Paris"
    assert got.limit == 5 and got.data == [1] and got.iteration_count == 1
    assert got.next_millis == next_cron_millis("0 0 * * *", int(time.time() * 1000), "Europe/Paris")
    assert queue.get_job_schedulers_count() == 2
    assert [s.id for s in queue.get_job_schedulers(asc=True)] == ["a", "b"]
    assert [s.id for s in queue.get_job_schedulers()] == ["b", "a"]
    assert queue.get_job_scheduler("nope") is None
    assert queue.remove_job_scheduler("b") is True
    assert queue.remove_job_scheduler("b") is False
    assert queue.get_job_schedulers_count() == 1 and pending(queue, "b") == []


def test_reupsert_replaces_pending_iteration_and_keeps_ic(queue: Queue, r: redis.Redis) -> None:
    first = queue.upsert_job_scheduler("s", {"every": 60_000}, {"name": "a"})
    r.hset(queue.keys["repeat:s"], "ic", 7)
    second = queue.upsert_job_scheduler("s", {"every": 60_000}, {"name": "b", "data": 2})
    assert first is not None and second is not None
    assert second.id == first.id  # same aligned slot, job rebuilt from the new template
    assert pending(queue, "s") == [second.id]
    assert second.name == "b" and second.data == 2
    assert r.hget(queue.keys["repeat:s"], "ic") == "7"
    assert any(e["event"] == "removed" and e["jobId"] == first.id for e in events(r, queue))


def test_cron_six_fields_seconds_first_and_time_zone() -> None:
    base = int(datetime(2026, 3, 28, 23, 59, 59, 500_000, tzinfo=UTC).timestamp() * 1000)
    # every 5 seconds: next :00 after 23:59:59.5
    assert next_cron_millis("*/5 * * * * *", base) == base + 500
    # 09:00 Paris on the DST switch day (UTC+2 from 29 March 2026)
    paris = next_cron_millis("0 9 * * *", base, "Europe/Paris")
    assert paris == int(datetime(2026, 3, 29, 7, 0, tzinfo=UTC).timestamp() * 1000)
    assert next_cron_millis("0 9 * * *", base, "Europe/Paris", end_date=base + 1000) is None
    start = base + 86_400_000 * 3
    assert next_cron_millis("0 0 * * *", base, start_date=start) == start + 500


@pytest.mark.parametrize(
    "repeat",
    [
        {},
        {"every": 1, "pattern": "* * * * *"},
        {"every": 0},
        {"pattern": "bad"},
        {"pattern": "* * * * *", "tz": "Mars/Base"},
        {"every": 10, "limit": 0},
        {"every": 10, "immediately": True, "start_date": 1},
        {"every": 10, "nope": 1},
    ],
)
def test_invalid_repeat_options_are_refused(queue: Queue, repeat: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        queue.upsert_job_scheduler("bad", repeat)
    assert queue.get_job_schedulers_count() == 0


def test_start_date_delays_first_run_and_end_date_in_past_writes_nothing(queue: Queue) -> None:
    start = int(time.time() * 1000) + 60_000
    job = queue.upsert_job_scheduler("later", {"every": 1000}, start_date=start)
    assert job is not None and job.id == f"repeat:later:{start}"
    assert queue.get_job_state(job.id) == "delayed"
    assert queue.upsert_job_scheduler("over", {"every": 1000}, end_date=1000) is None
    assert queue.get_job_scheduler("over") is None


def test_cron_immediately_runs_now(queue: Queue) -> None:
    job = queue.upsert_job_scheduler("now", {"pattern": "0 0 1 1 *"}, immediately=True)
    assert job is not None and queue.get_job_state(job.id) == "waiting"


def test_current_iteration_cannot_be_removed(queue: Queue) -> None:
    job = queue.upsert_job_scheduler("keep", {"every": 60_000})
    assert job is not None
    with pytest.raises(SchedulerIteration):
        queue.remove(job.id)


async def test_worker_runs_every_schedule_and_schedules_on_activation(queue: Queue) -> None:
    seen: list[tuple[str, int]] = []

    def proc(job: Any) -> None:
        seen.append((job.id, job.opts["repeat"]["count"]))

    await queue.aupsert_job_scheduler("fast", {"every": 200}, {"name": "tick"})
    await run_until(make_worker(queue, proc), lambda: len(seen) >= 4, timeout=5)
    millis = [int(i.rsplit(":", 1)[1]) for i, _ in seen]
    assert [b - a for a, b in zip(millis, millis[1:], strict=False)] == [200] * (len(seen) - 1)
    assert [c for _, c in seen] == list(range(1, len(seen) + 1))
    assert len(pending(queue, "fast")) == 1
    assert (await queue.aget_job_scheduler("fast")).iteration_count == len(seen) + 1


async def test_limit_stops_after_n_runs(queue: Queue) -> None:
    seen: list[str] = []
    await queue.aupsert_job_scheduler("lim", {"every": 100}, limit=3)
    worker = make_worker(queue, lambda job: seen.append(job.id))
    await run_until(worker, lambda: len(seen) >= 3, timeout=5)
    await asyncio.sleep(0.3)
    assert len(seen) == 3 and pending(queue, "lim") == []


async def test_end_date_stops_the_schedule(queue: Queue) -> None:
    seen: list[str] = []
    end = int(time.time() * 1000) + 450
    await queue.aupsert_job_scheduler("end", {"every": 200}, end_date=end)
    worker = make_worker(queue, lambda job: seen.append(job.id))
    await run_until(worker, lambda: int(time.time() * 1000) > end + 300, timeout=5)
    assert 2 <= len(seen) <= 3
    assert all(int(i.rsplit(":", 1)[1]) <= end for i in seen)


async def test_cron_schedule_runs_each_second(queue: Queue) -> None:
    seen: list[int] = []
    await queue.aupsert_job_scheduler("cron", {"pattern": "* * * * * *", "tz": "Asia/Tokyo"})
    worker = make_worker(queue, lambda job: seen.append(int(job.id.rsplit(":", 1)[1])))
    await run_until(worker, lambda: len(seen) >= 2, timeout=5)
    assert all(m % 1000 == 0 for m in seen) and seen[1] - seen[0] == 1000


async def test_removed_scheduler_stops(queue: Queue) -> None:
    seen: list[str] = []
    await queue.aupsert_job_scheduler("gone", {"every": 100})
    worker = make_worker(queue, lambda job: seen.append(job.id))
    await run_until(worker, lambda: len(seen) >= 1, timeout=5)
    assert await queue.aremove_job_scheduler("gone")
    assert await queue.aget_job_schedulers_count() == 0
    assert pending(queue, "gone") == []


async def test_async_twins(queue: Queue) -> None:
    job = await queue.aupsert_job_scheduler("tw", {"every": 5000}, {"name": "n"})
    assert job is not None
    assert [s.id for s in await queue.aget_job_schedulers()] == ["tw"]


def test_exhausted_limit_upsert_returns_none_and_datetime_dates(queue: Queue) -> None:
    job = queue.upsert_job_scheduler("once", {"every": 1000}, limit=1)
    assert job is not None
    queue.client.rpoplpush(queue.keys["wait"], queue.keys["active"])  # it started
    assert queue.upsert_job_scheduler("once", {"every": 1000}, limit=1) is None
    start = datetime.fromtimestamp(time.time() + 60, tz=UTC).replace(microsecond=0)
    later = queue.upsert_job_scheduler("dt", {"every": 1000}, start_date=start)
    assert later is not None and later.id == f"repeat:dt:{int(start.timestamp() * 1000)}"
    with pytest.raises(ValueError):
        queue.upsert_job_scheduler("naive", {"every": 1000}, start_date=datetime(2030, 1, 1))


@pytest.mark.parametrize("code", [-10, -11])
def test_scheduler_codes_raise_typed_errors(queue: Queue, code: int) -> None:
    from django_bullq.core.errors import SchedulerIterationExists, SchedulerSlotsBusy, script_error

    err = script_error(code, "repeat:s:1", "addJobScheduler")
    assert isinstance(err, {-10: SchedulerIterationExists, -11: SchedulerSlotsBusy}[code])
    if code == -10:
        nxt = next_cron_millis("0 0 1 1 *", int(time.time() * 1000))  # next New Year, UTC
        assert nxt is not None
        following = next_cron_millis("0 0 1 1 *", nxt)
        for millis in (nxt, following):  # both runs started (clocks far apart)
            queue.client.hset(queue.keys.job(f"repeat:c:{millis}"), "name", "started")
        with pytest.raises(SchedulerIterationExists):
            queue.upsert_job_scheduler("c", {"pattern": "0 0 1 1 *"})
        assert queue.get_job_scheduler("c") is None


def test_cron_upsert_racing_a_worker_takes_the_following_run(queue: Queue) -> None:
    """The run at the computed time has started between the upsert's clock read and its
    script (a worker just took it, or this client's clock is behind): the upsert schedules
    the pattern's following run instead of failing (case B14 raced here 2 runs in 40)."""
    nxt = next_cron_millis("0 0 1 1 *", int(time.time() * 1000))
    assert nxt is not None
    following = next_cron_millis("0 0 1 1 *", nxt)
    queue.client.hset(queue.keys.job(f"repeat:c:{nxt}"), "name", "started")
    job = queue.upsert_job_scheduler("c", {"pattern": "0 0 1 1 *"})
    assert job is not None and job.id == f"repeat:c:{following}"
    assert queue.get_job_scheduler("c") is not None
