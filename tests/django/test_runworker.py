"""``manage.py runworker``: queues, options, burst, signals (case B10) and exit codes."""

from __future__ import annotations

import base64
import io
import json
import logging
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

import django_bullq
from django_bullq.conf import get_queue
from django_bullq.core.job import STATES
from tests.support.helpers_django import burst
from tests.testapp import tasks as sample

ROOT = Path(__file__).resolve().parents[2]


# --- in process ----------------------------------------------------------------------------


def test_burst_processes_and_returns(queue_name: str) -> None:
    job = sample.add.using(queue=queue_name).enqueue(1, b=2)
    call_command("runworker", queue_name, "--burst")
    assert job.wait(timeout=1) == 3


def test_several_queues_at_once(queue_name: str) -> None:
    other = f"{queue_name}-b"
    first = sample.add.using(queue=queue_name).enqueue(1)
    second = sample.async_add.using(queue=other).enqueue(2, 3)
    call_command("runworker", queue_name, other, "--burst", "--concurrency", "2")
    assert first.wait(timeout=1) == 1
    assert second.wait(timeout=1) == 5


def test_default_queue_from_settings(settings: Any, queue_name: str) -> None:
    settings.BULLQ = {**settings.BULLQ, "DEFAULT_QUEUE": queue_name}
    job = sample.add.enqueue(7)
    call_command("runworker", "--burst")
    assert job.wait(timeout=1) == 7


def test_name_option_is_recorded_as_processed_by(queue_name: str) -> None:
    job = sample.add.using(queue=queue_name).enqueue(1)
    call_command("runworker", queue_name, "--burst", "--name", "w-test")
    assert job.refresh().processed_by == "w-test"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["a:b", "--burst"], "must not contain ':'"),
        (["q", "--concurrency", "0"], "--concurrency"),
        (["q", "--grace-period", "-1"], "--grace-period"),
    ],
)
def test_bad_arguments_are_command_errors(args: list[str], message: str) -> None:
    with pytest.raises(CommandError, match=message):
        call_command("runworker", *args)


def test_failed_job_does_not_stop_the_worker(queue_name: str) -> None:
    key = f"calls-{uuid.uuid4().hex}"
    bad = sample.always_fails.using(queue=queue_name, attempts=2).enqueue(key)
    good = sample.add.using(queue=queue_name).enqueue(1)
    burst(queue_name)
    assert good.wait(timeout=1) == 1
    bad.refresh()
    assert bad.failed_reason == "boom"
    assert bad.attempts_made == 2
    assert bad.stacktrace and "RuntimeError: boom" in bad.stacktrace[-1]


#: Where django_bullq's own files are (a path in a trace means one of its frames).
PACKAGE_DIR = os.path.dirname(django_bullq.__file__) + os.sep


@pytest.mark.parametrize(
    ("task_", "first_frame", "error"),
    [
        (sample.always_fails, "in always_fails", "RuntimeError: boom"),
        (sample.async_fails, "in async_fails", "RuntimeError: async boom"),
        (sample.fails_in_a_helper, "in fails_in_a_helper", "ValueError: raised in a helper"),
    ],
)
def test_a_failed_jobs_traceback_starts_at_the_task(
    queue_name: str, task_: Any, first_frame: str, error: str
) -> None:
    # the trace held 8 frames of the worker's own (worker.py, execution.py, threads.py,
    # dispatch.py) before the task's: what the admin and the log showed first
    args = ("k",) if task_ is sample.always_fails else ()
    job = task_.using(queue=queue_name, attempts=1).enqueue(*args)
    burst(queue_name)
    trace = job.refresh().stacktrace[-1]
    lines = trace.splitlines()
    assert lines[0] == "Traceback (most recent call last):"
    assert first_frame in lines[1], trace
    assert PACKAGE_DIR not in trace, trace
    assert lines[-1] == error


def test_a_traceback_that_is_all_the_workers_is_kept_whole(queue_name: str) -> None:
    # an error raised inside django_bullq itself (here: data of the wrong shape for the
    # task) keeps its frames: there is no task frame to start at
    job = get_queue(queue_name).add(sample.add.name, {"args": "not a list"})
    burst(queue_name)
    trace = job.refresh().stacktrace[-1]
    assert PACKAGE_DIR in trace and "UnrecoverableError" in trace


# --- subprocess: signals and exit codes (case B10) -----------------------------------------


def start_worker(*args: str, worker: dict[str, Any] | None = None) -> subprocess.Popen[str]:
    """``python -m django runworker ARGS`` on the test Redis (``worker``: BULLQ["WORKER"])."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "PYTHONUNBUFFERED": "1",
        "BULLQ_TEST_WORKER": json.dumps(worker or {}),
    }
    return subprocess.Popen(
        [sys.executable, "-m", "django", "runworker", *args, "-v", "2"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def worker_connected(queue_name: str) -> bool:
    """Whether a worker of ``queue_name`` holds its named blocking connection (BullMQ's
    ``<prefix>:<base64(queue)>[:w:<name>]`` client name, as ``getWorkers`` lists them)."""
    queue = get_queue(queue_name)
    name = f"{queue.prefix}:{base64.b64encode(queue_name.encode()).decode()}"
    return any(
        c.get("name") == name or str(c.get("name", "")).startswith(name + ":w:")
        for c in queue.client.client_list()
    )


def wait_for(predicate: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.02)


class StateMonitor:
    """Reads the job's state every few ms: it must always be in exactly one structure."""

    def __init__(self, queue_name: str, job_id: str) -> None:
        self.queue = get_queue(queue_name)
        self.job_id = job_id
        self.seen: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.seen.append(self.queue.get_job_state(self.job_id))
            time.sleep(0.005)

    def __enter__(self) -> StateMonitor:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join(2)

    def assert_never_lost(self) -> None:
        assert self.seen
        assert set(self.seen) <= set(STATES), set(self.seen) - set(STATES)


@pytest.fixture
def counter() -> Iterator[str]:
    yield f"calls-{uuid.uuid4().hex}"


def calls(key: str) -> int:
    return int(get_queue("default").client.get(key) or 0)


def finish(proc: subprocess.Popen[str], timeout: float = 10) -> tuple[int, str]:
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        raise AssertionError(f"runworker did not exit within {timeout} s:\n{out}") from None
    return proc.returncode, out


def test_burst_subprocess_exits_zero(queue_name: str) -> None:
    jobs = [sample.add.using(queue=queue_name).enqueue(i) for i in range(3)]
    code, out = finish(start_worker(queue_name, "--burst"))
    assert code == 0, out
    assert [j.wait(timeout=1) for j in jobs] == [0, 1, 2]


def test_case_b10_sigterm_lets_the_active_job_finish(queue_name: str, counter: str) -> None:
    job = sample.slow_first_call.using(queue=queue_name, attempts=3).enqueue(counter, 1.0)
    proc = start_worker(queue_name, "--grace-period", "8")
    with StateMonitor(queue_name, job.id) as monitor:
        wait_for(lambda: calls(counter) == 1)
        proc.send_signal(signal.SIGTERM)
        code, out = finish(proc)
    assert code == 0, out
    assert "SIGTERM" in out
    assert job.refresh().get_state() == "completed"
    assert job.returnvalue == 1
    assert calls(counter) == 1
    monitor.assert_never_lost()
    assert "completed" in monitor.seen and "active" in monitor.seen


def test_case_b10_grace_expiry_hands_the_job_back(queue_name: str, counter: str) -> None:
    job = sample.slow_first_call.using(queue=queue_name, attempts=3).enqueue(counter, 30.0)
    proc = start_worker(queue_name, "--grace-period", "0.3")
    with StateMonitor(queue_name, job.id) as monitor:
        wait_for(lambda: calls(counter) == 1)
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        code, out = finish(proc)
        elapsed = time.monotonic() - started
        assert code == 0, out
        assert elapsed < 5, f"worker took {elapsed:.1f} s to stop"
        assert "handed back to wait" in out
        assert job.get_state() == "waiting"
        burst(queue_name)  # a fresh worker
    assert job.wait(timeout=1) == 2
    assert calls(counter) == 2  # two processor calls in total
    monitor.assert_never_lost()


def test_case_b10_second_signal_stops_at_once(queue_name: str, counter: str) -> None:
    job = sample.slow_first_call.using(queue=queue_name, attempts=3).enqueue(counter, 30.0)
    proc = start_worker(queue_name, "--grace-period", "60")
    with StateMonitor(queue_name, job.id) as monitor:
        wait_for(lambda: calls(counter) == 1)
        proc.send_signal(signal.SIGTERM)
        time.sleep(0.3)
        assert proc.poll() is None  # still inside the grace period
        proc.send_signal(signal.SIGINT)
        code, out = finish(proc)
        assert code == 1, out
        assert job.get_state() == "waiting"
        burst(queue_name)
    assert job.wait(timeout=1) == 2
    monitor.assert_never_lost()


def test_sigterm_stops_every_queue_of_the_process(queue_name: str, counter: str) -> None:
    other = f"{queue_name}-b"
    job = sample.slow_first_call.using(queue=other).enqueue(counter, 1.0)
    proc = start_worker(queue_name, other, "--grace-period", "8")
    wait_for(lambda: calls(counter) == 1)  # queue_name's worker idles in its marker wait
    proc.send_signal(signal.SIGTERM)
    code, out = finish(proc)
    assert code == 0, out
    assert job.refresh().get_state() == "completed"
    assert out.count("SIGTERM") == 1


def test_case_b10_sigkill_job_is_recovered_by_a_fresh_worker(queue_name: str, counter: str) -> None:
    fast = {"LOCK_DURATION": 1000, "STALLED_INTERVAL": 500}
    job = sample.slow_first_call.using(queue=queue_name, attempts=3).enqueue(counter, 30.0)
    proc = start_worker(queue_name, worker=fast)
    with StateMonitor(queue_name, job.id) as monitor:
        wait_for(lambda: calls(counter) == 1)
        proc.kill()
        proc.communicate(timeout=5)
        assert job.get_state() == "active"  # nobody holds it; its lock expires in <= 1 s
        fresh = start_worker(queue_name, worker=fast)
        try:
            # timed from the fresh worker's first marker wait (its named connection), not
            # from its process start, which a loaded machine makes take seconds
            wait_for(lambda: worker_connected(queue_name), timeout=30)
            started = time.monotonic()
            wait_for(lambda: job.get_state() == "completed")
            # lockDuration + stalledInterval, with room for a loaded machine
            assert time.monotonic() - started < 1.0 + 0.5 + 3.0
        finally:
            fresh.send_signal(signal.SIGTERM)
            code, out = finish(fresh)
        assert code == 0, out
        assert "stalled" in out
    assert job.refresh().returnvalue == 2
    assert calls(counter) == 2
    monitor.assert_never_lost()


def test_processes_burst_ends_with_one_summary_of_all_processes(queue_name: str) -> None:
    # each child printed its own "runworker --burst: ..." line, so two lines for one run
    for _ in range(6):
        sample.process_id.using(queue=queue_name).enqueue(0.1)
    sample.always_fails.using(
        queue=queue_name, attempts=2, backoff={"type": "fixed", "delay": 60_000}
    ).enqueue("k")
    code, out = finish(start_worker(queue_name, "--burst", "--processes", "2"), timeout=20)
    assert code == 0, out
    summaries = [line for line in out.splitlines() if line.startswith("runworker --burst:")]
    assert summaries == [
        "runworker --burst: 6 job(s) processed by 2 processes (6 completed, 0 failed; "
        "1 failed attempt(s) retried); 1 retry still delayed; run again once they are due, "
        "or run without --burst"
    ], out


def test_processes_share_the_queue_and_stop_together(queue_name: str) -> None:
    """``--processes 2``: two worker processes take jobs of one queue; each job runs once."""
    jobs = [sample.process_id.using(queue=queue_name).enqueue(0.3) for _ in range(8)]
    code, out = finish(
        start_worker(queue_name, "--burst", "--processes", "2", "--name", "cpu"), timeout=20
    )
    assert code == 0, out
    pids = [j.wait(timeout=1) for j in jobs]
    assert len(set(pids)) == 2
    assert {j.refresh().processed_by for j in jobs} == {"cpu-1", "cpu-2"}
    assert get_queue(queue_name).get_job_counts("completed")["completed"] == 8

    proc = start_worker(queue_name, "--processes", "2")
    client_name = f"bull:{base64.b64encode(queue_name.encode()).decode()}"
    redis = get_queue(queue_name).client
    # unnamed runs are named <host>-<pid> (children <host>-<pid>-<i>), as dashboards list them
    names = lambda: [str(c.get("name")) for c in redis.client_list()]  # noqa: E731
    wait_for(
        lambda: sum(n.startswith(f"{client_name}:w:{socket.gethostname()}-") for n in names()) == 2,
        timeout=15,
    )
    proc.send_signal(signal.SIGTERM)
    code, out = finish(proc, timeout=15)
    assert code == 0, out
    assert out.count("SIGTERM") == 2


def test_burst_without_redis_is_a_command_error(settings: Any, queue_name: str) -> None:
    """A --burst run (cron, CI) reports an unreachable Redis instead of retrying forever."""
    from tests.support.redis_server import free_port

    settings.BULLQ = {
        **settings.BULLQ,
        "CONNECTIONS": {"default": {"URL": f"redis://127.0.0.1:{free_port()}/0"}},
    }
    with pytest.raises(CommandError, match=r"Redis at 127\.0\.0\.1:\d+ unreachable"):
        call_command("runworker", queue_name, "--burst", stdout=io.StringIO())


@pytest.mark.parametrize("flags", [["--burst"], []], ids=["burst", "long-running"])
def test_wrong_password_is_a_command_error_not_an_outage(
    settings: Any, queue_name: str, flags: list[str]
) -> None:
    """A wrong password is a setting to fix, not an outage to wait out: both a --burst and a
    long-running worker stop at once, saying so, without the password."""
    from tests.support.redis_security import password_server

    node = password_server()
    try:
        settings.BULLQ = {
            **settings.BULLQ,
            "CONNECTIONS": {"default": {"URL": f"redis://:wrong-pw@127.0.0.1:{node.port}/0"}},
        }
        with pytest.raises(CommandError) as caught:
            call_command("runworker", queue_name, *flags, stdout=io.StringIO())
        message = str(caught.value)
        assert f"Redis at 127.0.0.1:{node.port} refused the credentials" in message, message
        assert "wrong-pw" not in message
    finally:
        node.stop()


# --- what a person meets (issue 14, scope 4) ---------------------------------------------


def run_command(*args: str) -> tuple[str, str]:
    """``call_command("runworker", *args)``; returns (stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    call_command("runworker", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_start_banner_says_redis_queues_concurrency_loop_and_tasks(queue_name: str) -> None:
    from django_bullq.conf import get_queue as queue_of

    sample.add.using(queue=queue_name).enqueue(1)
    out, _ = run_command(queue_name, "default", "--burst", "--concurrency", "3", "--name", "w9")
    assert f"django_bullq {django_bullq.__version__} runworker w9 (burst)" in out
    assert f"Redis:       {queue_of(queue_name).connection.describe()}" in out
    assert f"queues:      {queue_name}, default" in out
    assert "concurrency: 3 per queue, 1 process" in out
    assert re.search(r"event loop:  (uvloop|asyncio)\n", out), out
    assert f"    {queue_name}: (none registered)" in out  # its jobs come from .using(queue=...)
    default_tasks = out.split("    default: ", 1)[1].splitlines()[0]
    assert "tests.testapp.tasks.add" in default_tasks.split(", ")
    assert "and django.tasks tasks of backend(s) default, by import path" in out


def test_start_banner_names_the_queues_with_tasks_it_does_not_run(queue_name: str) -> None:
    # `runworker <queue>` listed "(none registered)" and said nothing of the queue the
    # project's tasks are on, so a worker on the wrong queue looked idle for no reason
    out, _ = run_command(queue_name, "--burst")
    assert f"    {queue_name}: (none registered)" in out
    line = next(x for x in out.splitlines() if x.startswith("    not run here: "))
    assert re.fullmatch(r"    not run here: default \(\d+ tasks\)(, .+)?", line), line
    both, _ = run_command(queue_name, "default", "--burst")
    assert "not run here: default" not in both


def test_start_banner_hides_the_redis_password(settings: Any) -> None:
    from django_bullq.worker.banner import banner

    settings.BULLQ = {
        **settings.BULLQ,
        "CONNECTIONS": {"default": "redis://app:s3cret@redis.example:6380/2?password=x"},
    }
    text = "\n".join(banner(["q"], concurrency=None, processes=2, burst=False, name="w"))
    assert "s3cret" not in text and "password=x" not in text
    assert "redis://app:***@redis.example:6380/2" in text
    assert "concurrency: 1 per queue, 2 processes" in text


def test_unknown_queue_warns_and_suggests_close_matches() -> None:
    """`runworker defualt` exited 0 in silence: a typo must say so and name 'default'."""
    typo = "defualt"  # no task, no job
    get_queue(typo).obliterate(force=True)
    _, err = run_command(typo, "--burst")
    assert f"queue {typo!r} has no registered task and holds no job" in err
    assert "Did you mean 'default'?" in err


def test_queue_with_jobs_or_tasks_does_not_warn(queue_name: str) -> None:
    sample.add.using(queue=queue_name).enqueue(1)  # no task names the queue, but it has a job
    _, err = run_command(queue_name, "--burst")
    assert "has no registered task" not in err
    _, err = run_command("default", "--burst")
    assert "has no registered task" not in err


def test_v2_logs_one_line_per_finished_job(
    queue_name: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="django_bullq")
    ok = sample.add.using(queue=queue_name).enqueue(1, 2)
    bad = sample.give_up.using(queue=queue_name).enqueue()
    run_command(queue_name, "--burst", "-v", "2")
    lines = [r.getMessage() for r in caplog.records]
    done = [m for m in lines if f"job {ok.id} (tests.testapp.tasks.add)" in m]
    assert len(done) == 1 and re.search(r"completed in \d+ ms$", done[0]), done
    failed = [m for m in lines if f"job {bad.id} (tests.testapp.tasks.give_up)" in m]
    assert len(failed) == 1 and "failed after 1 attempt(s): not worth retrying" in failed[0]


def test_signature_mismatch_fails_in_one_readable_line(
    queue_name: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Bad input at the default verbosity: one ERROR line with the reason, no traceback."""
    caplog.set_level(logging.INFO, logger="django_bullq")
    job = get_queue(queue_name).add("tests.testapp.tasks.add", {"args": [1, 2, 3], "kwargs": {}})
    run_command(queue_name, "--burst")
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1, errors
    assert f"job {job.id} (tests.testapp.tasks.add) failed after 1 attempt(s)" in errors[0]
    assert "does not match the signature of task 'tests.testapp.tasks.add'" in errors[0]
    assert "Traceback" not in errors[0] and "\n" not in errors[0]


def test_burst_ends_with_processed_jobs_and_delayed_retries(queue_name: str) -> None:
    key = f"calls-{uuid.uuid4().hex}"
    sample.always_fails.using(queue=queue_name, attempts=3, backoff=60_000).enqueue(key)
    sample.add.using(queue=queue_name).enqueue(1)
    out, _ = run_command(queue_name, "--burst")
    assert (  # the attempt that failed and was retried counts (new-user trial)
        "runworker --burst: 1 job(s) processed (1 completed, 0 failed; "
        "1 failed attempt(s) retried); 1 retry still delayed" in out
    ), out
    assert "run again once they are due" in out


def test_concurrency_flag_over_sqlite_warns(queue_name: str) -> None:
    """The test settings' SQLite databases begin DEFERRED: --concurrency 2 says so (W002)."""
    sample.add.using(queue=queue_name).enqueue(1)
    _, err = run_command(queue_name, "--burst", "--concurrency", "2")
    assert "runworker runs 2 jobs at once per queue" in err
    assert "database is locked" in err and "'transaction_mode': 'IMMEDIATE'" in err
    _, err = run_command(queue_name, "--burst", "--concurrency", "1")
    assert "database is locked" not in err


def test_database_index_out_of_range_is_a_command_error(settings: Any, queue_name: str) -> None:
    base = settings.BULLQ["CONNECTIONS"]["default"]["URL"].rsplit("/", 1)[0]
    settings.BULLQ = {**settings.BULLQ, "CONNECTIONS": {"default": {"URL": f"{base}/99"}}}
    address = base.split("//", 1)[1]
    message = rf"Redis database 99 does not exist on {re.escape(address)} \(databases = 16\)"
    with pytest.raises(CommandError, match=message):
        call_command("runworker", queue_name, "--burst", stdout=io.StringIO())
    with pytest.raises(CommandError, match=message):  # a long-running worker stops too
        call_command("runworker", queue_name, stdout=io.StringIO())


def test_burst_without_redis_is_one_line_and_exit_1(queue_name: str) -> None:
    """`--burst` with Redis down: one clear line, no traceback, a non-zero exit."""
    from tests.support.redis_server import free_port

    port = free_port()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings_down",
        "BULLQ_TEST_DOWN_URL": f"redis://:s3cret@127.0.0.1:{port}/0",
    }
    proc = subprocess.run(
        [sys.executable, "-m", "django", "runworker", queue_name, "--burst"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1, proc
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert lines == [
        f"CommandError: Redis at 127.0.0.1:{port} unreachable (ConnectionError: Error 111 "
        f"connecting to 127.0.0.1:{port}. Connection refused.); --burst gives up"
    ], proc.stderr


def test_channels_listed_first_fails_runworker_with_what_to_do(queue_name: str) -> None:
    """channels above django_bullq: not Channels' usage text, but what to do; and
    `manage.py bullq runworker` runs our worker all the same."""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings_channels_first"}
    env.pop("BULLQ_FOREIGN_RUNWORKER", None)
    proc = subprocess.run(
        [sys.executable, "-m", "django", "runworker"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1, proc
    assert "usage:" not in proc.stderr + proc.stdout
    assert "List 'django_bullq' above 'channels' in INSTALLED_APPS" in proc.stderr
    assert "manage.py bullq runworker" in proc.stderr

    job = sample.add.using(queue=queue_name).enqueue(2, 3)
    proc = subprocess.run(
        # --processes: the children are `bullq runworker` too (`runworker` is Channels')
        [sys.executable, "-m", "django", "bullq", "runworker", queue_name, "--burst"]
        + ["--processes", "2"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc
    assert job.wait(timeout=1) == 5
    assert f"queues:      {queue_name}" in proc.stdout
    assert proc.stdout.count("runworker --burst: ") == 1  # one summary for both processes
