"""Job schedulers on real Redis: upsert / read / remove, every, cron + tz, limit, dates, runs."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import redis

from django_bullq import Job, Queue
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


# -------------------------------------------------------------------------------------------------
# Cases B14 (concurrent scheduler upserts) and B16 (several worker processes, one schedule).
#
# Scaled to keep the suite fast: the case's ``every: 1000`` over 10 s (10 ± 1 runs) becomes
# ``every: 300`` ms over 3 s (10 ± 1 runs); the cron re-run uses ``* * * * * *`` (each second) over
# 3 s (3 ± 1 runs). B16 runs three ``manage.py runworker`` processes for ~3 s with ``every: 300``
# plus a one-shot (``limit: 1`` with ``start_date``): 10 ± 1 and exactly 1.


ROOT = Path(__file__).resolve().parents[2]


SYNC_TEMPLATE = {"name": "sync", "data": {}, "opts": {"remove_on_complete": True}}


def pending_ids(queue: Queue, scheduler_id: str) -> list[str]:
    """Not-yet-started iterations of ``scheduler_id``, read atomically (MULTI)."""
    pipe = queue.client.pipeline(transaction=True)
    pipe.lrange(queue.keys["wait"], 0, -1)
    pipe.zrange(queue.keys["delayed"], 0, -1)
    pipe.zrange(queue.keys["prioritized"], 0, -1)
    ids = [str(x.decode() if isinstance(x, bytes) else x) for part in pipe.execute() for x in part]
    return [i for i in ids if i.startswith(f"repeat:{scheduler_id}:")]


def concurrent_upserts(redis_url: str, queue_name: str, n: int, repeat: dict[str, Any]) -> None:
    """``n`` threads, each with its own Queue (own connections), upsert at one barrier."""
    queues = [Queue(queue_name, redis_url) for _ in range(n)]
    barrier = threading.Barrier(n)
    errors: list[BaseException] = []

    def one(q: Queue) -> None:
        try:
            barrier.wait()
            q.upsert_job_scheduler("sync", repeat, SYNC_TEMPLATE)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(q,)) for q in queues]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    for q in queues:
        q.close()
    assert not errors, errors


def millis_of(job_id: str) -> int:
    return int(job_id.rsplit(":", 1)[1])


async def run_b14(
    queue: Queue, redis_url: str, repeat: dict[str, Any], seconds: float
) -> tuple[list[str], int]:
    """Worker running; 10 concurrent upserts; a second round of 10 while an iteration is in
    progress; watch the pending iterations. Returns (ids run, max pending seen)."""
    ran: list[str] = []
    active = asyncio.Event()

    async def proc(job: Job) -> None:
        ran.append(job.id)
        active.set()
        await asyncio.sleep(0.1)
        active.clear()

    worker = make_worker(queue, proc)
    task = asyncio.create_task(worker.arun())
    start = time.monotonic()
    max_pending = 0
    second_round = False
    try:
        await asyncio.to_thread(concurrent_upserts, redis_url, queue.name, 10, repeat)
        assert queue.get_job_schedulers_count() == 1
        # between a worker's fetch and its updateJobScheduler call nothing is pending (as in
        # BullMQ): "one pending iteration" is checked as "never more than one", and exactly
        # one once the worker has stopped
        assert len(pending_ids(queue, "sync")) <= 1
        while time.monotonic() - start < seconds:
            max_pending = max(max_pending, len(pending_ids(queue, "sync")))
            if not second_round and ran and active.is_set():
                second_round = True
                await asyncio.to_thread(concurrent_upserts, redis_url, queue.name, 10, repeat)
            await asyncio.sleep(0.02)
    finally:
        worker.close()
        await asyncio.wait_for(task, 15)
    assert second_round, "no iteration was in progress during the run"
    return ran, max_pending


async def test_case_b14_concurrent_upserts_leave_one_pending_iteration_every(
    queue: Queue, redis_url: str
) -> None:
    ran, max_pending = await run_b14(queue, redis_url, {"every": 300}, 3.0)
    assert max_pending == 1
    assert queue.get_job_schedulers_count() == 1
    assert queue.client.exists(queue.keys["repeat:sync"]) == 1
    assert len(pending_ids(queue, "sync")) == 1
    stamps = [millis_of(i) for i in ran]
    assert len(stamps) == len(set(stamps)), "two runs of one iteration timestamp"
    assert all(b - a == 300 for a, b in zip(stamps, stamps[1:], strict=False)), [
        b - a for a, b in zip(stamps, stamps[1:], strict=False)
    ]
    assert 9 <= len(ran) <= 11, len(ran)


async def test_case_b14_concurrent_upserts_leave_one_pending_iteration_cron(
    queue: Queue, redis_url: str
) -> None:
    ran, max_pending = await run_b14(queue, redis_url, {"pattern": "* * * * * *"}, 3.2)
    assert max_pending == 1 and len(pending_ids(queue, "sync")) == 1
    stamps = [millis_of(i) for i in ran]
    assert len(stamps) == len(set(stamps)) and all(s % 1000 == 0 for s in stamps)
    assert 2 <= len(ran) <= 4, len(ran)


def start_runworker(queue_name: str, schedulers: dict[str, Any]) -> subprocess.Popen[str]:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "PYTHONUNBUFFERED": "1",
        "BULLQ_TEST_WORKER": json.dumps({"DRAIN_DELAY": 0.2, "CONCURRENCY": 2}),
        "BULLQ_TEST_SCHEDULERS": json.dumps(schedulers),
    }
    return subprocess.Popen(
        [sys.executable, "-m", "django", "runworker", queue_name],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


@pytest.mark.django_layer
def test_case_b16_three_worker_processes_do_not_double_enqueue(
    queue_name: str, redis_url: str
) -> None:
    r = redis.Redis.from_url(redis_url, decode_responses=True)
    every_key, once_key = f"every:{queue_name}", f"once:{queue_name}"
    task = "tests.testapp.tasks.record_job"
    # the one-shot (start_date, limit 1) is due ~1.5 s from now
    once_at = int(time.time() * 1000) + 1500
    schedulers = {
        "every": {"task": task, "queue": queue_name, "every": 300, "args": [every_key]},
        "once": {
            "task": task,
            "queue": queue_name,
            "every": 3_600_000,
            "limit": 1,
            "start_date": once_at,
            "args": [once_key],
        },
    }
    procs = [start_runworker(queue_name, schedulers) for _ in range(3)]
    try:
        deadline = time.monotonic() + 15
        while r.llen(every_key) == 0:  # the first run marks t0 (imports take a while)
            assert time.monotonic() < deadline, [p.poll() for p in procs]
            time.sleep(0.01)
        first = millis_of(r.lindex(every_key, 0))
        time.sleep(max(0.0, (first + 3000 - time.time() * 1000) / 1000) + 0.2)
        assert all(p.poll() is None for p in procs)
        ran = r.lrange(every_key, 0, -1)
        once = r.lrange(once_key, 0, -1)
    finally:
        for p in procs:
            p.terminate()
        outputs = [p.communicate(timeout=15)[0] for p in procs]
    stamps = [millis_of(i) for i in ran]
    assert len(stamps) == len(set(stamps)), "two jobs with the same iteration timestamp"
    in_window = [s for s in stamps if s < first + 3000]
    assert 9 <= len(in_window) <= 11, (stamps, outputs)
    # at start_date, or at the first upsert if the processes started later than that
    assert len(once) == 1 and millis_of(once[0]) >= once_at, (once, outputs)
    pb = {r.hget(f"bull:{queue_name}:{i}", "pb") for i in ran} - {None}
    assert len(pb) <= 3


# -------------------------------------------------------------------------------------------------
# Case B21: a deduplication id in a job scheduler's template must not stop the schedule.
#
# Scaled from the case (every 500 ms, 1 s runs, 10 s) to every 250 ms, 500 ms runs, 5 s.
# Contract: iterations are created by the scheduler scripts, which own the "one pending
# iteration" rule; the template's ``deduplication`` is stored on each iteration but not applied to
# them, so a deduplicated iteration can never break the chain. Runs longer than ``every`` overlap
# on a worker with concurrency > 1 (use concurrency 1, or a global concurrency of 1, to serialise
# them) — see docs/schedulers.md.


async def test_case_b21_dedup_in_scheduler_template_keeps_the_schedule_running(
    queue: Queue,
) -> None:
    queue.upsert_job_scheduler(
        "w1", {"every": 250}, {"name": "w1", "data": {}, "opts": {"deduplication": {"id": "de_w1"}}}
    )
    runs: list[str] = []

    async def proc(job: Job) -> None:
        runs.append(job.id)
        await asyncio.sleep(0.5)

    worker = make_worker(queue, proc, concurrency=4)
    task = asyncio.create_task(worker.arun())
    max_pending = 0
    try:
        end = time.monotonic() + 5
        while time.monotonic() < end:
            max_pending = max(max_pending, len(pending_ids(queue, "w1")))
            await asyncio.sleep(0.02)
    finally:
        worker.close()
        await task
    assert len(runs) >= 16, runs  # 5 s / 250 ms = 20 iterations; the chain never stopped
    assert len(runs) == len(set(runs))
    assert max_pending == 1
    assert len(pending_ids(queue, "w1")) == 1  # the scheduler still has its next iteration


def _active_ids(queue: Queue) -> list[str]:
    return [
        str(x.decode() if isinstance(x, bytes) else x)
        for x in queue.client.lrange(queue.keys["active"], 0, -1)
    ]


async def _run_one_iteration_and_close(
    queue: Queue, admin: redis.Redis, *, during_finish: bool
) -> None:
    """Start a worker, close it while an iteration runs, and wait until it has stopped.

    ``during_finish``: close while the iteration's finish call is on its way, so that call
    (sent before the close, answered after it) fetches the next, already due, iteration.
    Redis is made to hold the finish with ``CLIENT PAUSE WRITE`` so the order is certain.
    """
    loop = asyncio.get_running_loop()
    ran: list[str] = []

    async def proc(job: Job) -> None:
        ran.append(job.id)
        if during_finish:
            await asyncio.sleep(0.03)  # the next iteration (every 20 ms) is due by now
            admin.client_pause(150, all=False)  # the finish call waits in Redis...
            loop.call_later(0.03, worker.close)  # ...while the worker is told to close
        else:
            loop.call_soon(worker.close)
            await asyncio.sleep(0.03)

    worker = make_worker(queue, proc, concurrency=1)
    await asyncio.wait_for(worker.arun(), 15)
    assert len(ran) == 1, ran


async def test_closing_worker_hands_back_the_iteration_its_finish_fetched(
    queue: Queue, r: redis.Redis
) -> None:
    """A finish call sent just before close() fetches the next iteration: it goes back to wait
    at once (not left active until its lock expires, which also counted a stall)."""
    queue.upsert_job_scheduler("s", {"every": 20}, {"name": "s", "data": {}})
    await _run_one_iteration_and_close(queue, r, during_finish=True)
    assert _active_ids(queue) == []
    assert len(pending_ids(queue, "s")) == 1
    (pending,) = pending_ids(queue, "s")
    assert r.hget(queue.keys.job(pending), "stc") in (None, "0")  # no stall was counted


async def test_closing_a_worker_mid_iteration_100_times_keeps_one_pending_iteration(
    queue: Queue, r: redis.Redis
) -> None:
    """Issue 12 item 8: close a worker mid-iteration 100 times in a row, alternately while
    the iteration runs and while its finish call is on its way; each time the scheduler has
    exactly one pending iteration and nothing is left active."""
    queue.upsert_job_scheduler("s", {"every": 20}, {"name": "s", "data": {}})
    for round_no in range(100):
        await _run_one_iteration_and_close(queue, r, during_finish=round_no % 2 == 0)
        assert _active_ids(queue) == [], round_no
        assert len(pending_ids(queue, "s")) == 1, round_no


async def test_paused_worker_hands_back_the_job_its_finish_fetched(
    queue: Queue, r: redis.Redis
) -> None:
    """The same window for ``pause()``: a job fetched by the last finish goes back to wait."""
    first = queue.add("a", {})
    second = queue.add("b", {})
    loop = asyncio.get_running_loop()
    ran: list[str] = []
    paused: list[asyncio.Task[None]] = []

    async def proc(job: Job) -> None:
        ran.append(job.id)
        r.client_pause(150, all=False)
        loop.call_later(0.03, lambda: paused.append(asyncio.ensure_future(worker.pause())))

    worker = make_worker(queue, proc, concurrency=1)
    task = asyncio.create_task(worker.arun())
    try:
        while not paused:
            await asyncio.sleep(0.01)
        await asyncio.wait_for(paused[0], 10)
        assert ran == [first.id]
        assert _active_ids(queue) == []
        assert queue.get_job_state(second.id) == "waiting"
    finally:
        worker.close()
        await asyncio.wait_for(task, 15)


@pytest.mark.parametrize("every", [0, -5, 100 * 365 * 24 * 3600 * 1000 + 1, 10**20, True, 1.5])
def test_every_outside_1_ms_to_100_years_is_refused(queue: Queue, every: Any) -> None:
    # 1e20 ms was stored, and its run got the id repeat:<id>:1.0000000179618e+20
    with pytest.raises(ValueError, match="every must be an int from 1 to"):
        queue.upsert_job_scheduler("far", {"every": every}, TEMPLATE)
    assert queue.get_job_scheduler("far") is None
