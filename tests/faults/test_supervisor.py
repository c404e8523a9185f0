"""The ``runworker --processes`` supervisor: replacement of dead children, the crash-loop bound,
recycling, signal forwarding; then the real command with ``--max-jobs``, ``--max-memory`` and a
worker process killed by its job, and ``@task(process=True)``."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from django_bullq.worker.supervisor import RECYCLE_EXIT, Supervisor
from tests.django.test_runworker import calls, finish, start_worker, wait_for
from tests.support.helpers_django import burst
from tests.testapp import tasks as sample

# A child that runs the n-th time (per slot) exits with CODES[n] (the last code repeats).
CHILD = """
import os, sys, time
path, codes = sys.argv[1], [int(c) for c in sys.argv[2].split(",")]
runs = int(open(path).read()) if os.path.exists(path) else 0
open(path, "w").write(str(runs + 1))
code = codes[min(runs, len(codes) - 1)]
if code < 0:
    time.sleep(30)
sys.exit(code)
"""


def supervisor(tmp_path: Path, codes: str, count: int = 1, **options: float) -> Supervisor:
    def command(slot: int) -> list[str]:
        return [sys.executable, "-c", CHILD, str(tmp_path / f"slot-{slot}"), codes]

    return Supervisor(count, command, **options)  # type: ignore[arg-type]


def runs(tmp_path: Path, slot: int = 1) -> int:
    return int((tmp_path / f"slot-{slot}").read_text())


def test_a_dead_child_is_replaced(tmp_path: Path) -> None:
    sup = supervisor(tmp_path, "3,0", count=2)
    assert sup.run() == 0
    assert (sup.restarts, runs(tmp_path, 1), runs(tmp_path, 2)) == (2, 2, 2)


def test_a_crash_loop_gives_up(tmp_path: Path) -> None:
    sup = supervisor(tmp_path, "3", max_restarts=2, restart_window_s=60)
    started = time.monotonic()
    assert sup.run() == 3
    assert sup.gave_up and sup.restarts == 2 and runs(tmp_path) == 3
    assert time.monotonic() - started < 5  # back-off 0.1 s, 0.2 s


def test_a_crash_loop_stops_the_other_children(tmp_path: Path) -> None:
    def command(slot: int) -> list[str]:
        return [
            sys.executable,
            "-c",
            CHILD,
            str(tmp_path / f"slot-{slot}"),
            "3" if slot == 1 else "-1",
        ]

    sup = Supervisor(2, command, max_restarts=1)
    assert sup.run() == 3
    assert runs(tmp_path, 2) == 1  # the sleeper got SIGTERM, was not restarted


def test_a_recycled_child_is_replaced_at_once(tmp_path: Path) -> None:
    sup = supervisor(tmp_path, f"{RECYCLE_EXIT},{RECYCLE_EXIT},0")
    assert sup.run() == 0
    assert (sup.recycled, sup.restarts, runs(tmp_path)) == (2, 0, 3)


def test_signals_are_forwarded_once_and_nothing_restarts(tmp_path: Path) -> None:
    sup = supervisor(tmp_path, "-1", count=2)
    timer = threading.Timer(0.8, os.kill, (os.getpid(), signal.SIGTERM))
    timer.start()
    try:
        assert sup.run() == 0
    finally:
        timer.cancel()
    assert sup.forwarded == {signal.SIGTERM}
    assert (runs(tmp_path, 1), runs(tmp_path, 2), sup.restarts) == (1, 1, 0)


# --- the real command ------------------------------------------------------------------------


@pytest.mark.django_layer
def test_max_jobs_recycles_the_worker_process(queue_name: str) -> None:
    jobs = [sample.process_id.using(queue=queue_name).enqueue() for _ in range(4)]
    code, out = finish(start_worker(queue_name, "--burst", "--max-jobs", "2"), timeout=25)
    assert code == 0, out
    pids = [j.wait(timeout=1) for j in jobs]
    assert pids[0] == pids[1] and pids[2] == pids[3] and pids[0] != pids[2], pids
    assert out.count("recycling: 2 jobs done") == 2


@pytest.mark.django_layer
def test_max_memory_recycles_after_each_job(queue_name: str) -> None:
    jobs = [sample.process_id.using(queue=queue_name).enqueue() for _ in range(2)]
    code, out = finish(start_worker(queue_name, "--burst", "--max-memory", "1"), timeout=25)
    assert code == 0, out
    pids = [j.wait(timeout=1) for j in jobs]
    assert len(set(pids)) == 2
    assert "recycling: RSS" in out


@pytest.mark.django_layer
def test_a_worker_process_killed_by_its_job_is_replaced(queue_name: str) -> None:
    key = f"calls-{uuid.uuid4().hex}"
    job = sample.crash_first_call.using(queue=queue_name, attempts=2).enqueue(key)
    proc = start_worker(
        queue_name, "--processes", "2", worker={"LOCK_DURATION": 1000, "STALLED_INTERVAL": 500}
    )
    try:
        wait_for(lambda: job.get_state() == "completed", timeout=15)
    finally:
        proc.send_signal(signal.SIGTERM)
        code, out = finish(proc, timeout=15)
    assert code == 0, out
    assert "died (exit 3); replacing it" in out
    assert calls(key) == 2
    assert job.refresh().returnvalue != proc.pid


@pytest.mark.django_layer
@pytest.mark.parametrize("flag", ["--max-jobs", "--max-memory"])
def test_recycle_limits_must_be_positive(flag: str) -> None:
    from django.core.management import CommandError, call_command

    with pytest.raises(CommandError, match=flag):
        call_command("runworker", "q", flag, "0")


# --- @task(process=True) ---------------------------------------------------------------------


@pytest.mark.django_layer
def test_process_task_runs_in_a_spawned_process(queue_name: str) -> None:
    job = sample.cpu_in_process.using(queue=queue_name).enqueue(1000)
    failing = sample.fails_in_process.using(queue=queue_name).enqueue()
    burst(queue_name)
    result = job.wait(timeout=1)
    assert result["total"] == sum(i * i for i in range(1000))
    assert result["pid"] != os.getpid() and result["parent"] == os.getpid()
    failing.refresh()
    assert failing.failed_reason == "bad input seen in the child"


@pytest.mark.django_layer
def test_process_task_honours_its_timeout(queue_name: str) -> None:
    job = sample.cpu_in_process.using(queue=queue_name, timeout=300).enqueue(10**9)
    started = time.monotonic()
    burst(queue_name)
    assert time.monotonic() - started < 8
    job.refresh()
    assert job.failed_reason == "timed out after 300 ms"
    from django_bullq.worker import process_pool

    assert process_pool._pool is None  # the computing child was terminated with its pool
    again = sample.cpu_in_process.using(queue=queue_name).enqueue(10)
    burst(queue_name)
    assert again.wait(timeout=1)["total"] == 285  # a fresh pool
    process_pool.shutdown()


@pytest.mark.django_layer
def test_a_process_task_that_kills_its_process_fails_alone_and_the_pool_is_rebuilt(
    queue_name: str,
) -> None:
    # new-user trial: after one child died, every later process task failed in 2 ms with
    # "the process pool is not usable anymore" until the worker restarted
    dying = sample.dies_in_process.using(queue=queue_name).enqueue()
    burst(queue_name)
    dying.refresh()
    assert dying.failed_reason is not None
    assert "process running the job ended abruptly" in dying.failed_reason
    later = [sample.cpu_in_process.using(queue=queue_name).enqueue(10) for _ in range(3)]
    burst(queue_name)
    assert [job.wait(timeout=1)["total"] for job in later] == [285, 285, 285]
    from django_bullq.worker import process_pool

    process_pool.shutdown()


def test_process_option_needs_a_sync_function() -> None:
    from django_bullq import task

    async def coro() -> None:
        return None

    with pytest.raises(ValueError, match="process=True"):
        task(process=True, name="tests.supervisor.async_process")(coro)
