"""Cases B14 (concurrent scheduler upserts) and B16 (several worker processes, one schedule).

Scaled to keep the suite fast: the case's ``every: 1000`` over 10 s (10 ± 1 runs) becomes
``every: 300`` ms over 3 s (10 ± 1 runs); the cron re-run uses ``* * * * * *`` (each second) over
3 s (3 ± 1 runs). B16 runs three ``manage.py runworker`` processes for ~3 s with ``every: 300``
plus a one-shot (``limit: 1`` with ``start_date``): 10 ± 1 and exactly 1.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import redis

from django_bullq import Job, Queue
from tests.support.workerkit import make_worker

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = {"name": "sync", "data": {}, "opts": {"remove_on_complete": True}}


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
            q.upsert_job_scheduler("sync", repeat, TEMPLATE)
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


# --- B16: three runworker processes ---------------------------------------------------------


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
