"""``manage.py bullq health``: live / stale workers from heartbeats, exit status for probes."""

from __future__ import annotations

import asyncio
import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import redis
from django.core.management import call_command

from django_bullq.conf import get_queue
from django_bullq.core import heartbeat
from tests.support.redis_server import free_port
from tests.support.workerkit import make_worker

ROOT = Path(__file__).resolve().parents[2]


def health(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command("bullq", "health", *args, stdout=out, stderr=err)
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    return code, out.getvalue(), err.getvalue()


def test_no_worker_is_unhealthy(queue_name: str) -> None:
    code, out, _ = health("--queue", queue_name)
    assert code == 1
    assert f"queue {queue_name}: 0 alive, 0 stale" in out


async def test_live_and_stale_workers_are_reported(queue_name: str, r: redis.Redis) -> None:
    queue = get_queue(queue_name)
    # a worker SIGKILLed earlier: its registry entry outlives its expired key
    r.zadd(heartbeat.registry_key(queue.keys), {"gone": int(time.time() * 1000) - 60_000})
    worker = make_worker(queue, lambda job: None, name="live", concurrency=3)
    task = asyncio.create_task(worker.arun())
    try:
        while not r.exists(heartbeat.beat_key(queue.keys, "live")):
            await asyncio.sleep(0.05)
        code, out, _ = health("--queue", queue_name)
        assert code == 0, out
        assert f"queue {queue_name}: 1 alive, 1 stale" in out
        assert "alive  live" in out and "active 0/3" in out
        assert "stale  gone  last beat 6" in out
        assert health("--queue", queue_name, "--worker", "live")[0] == 0
        code, out, _ = health("--queue", queue_name, "--worker", "gone")
        assert code == 1 and "worker gone: NOT alive" in out
        code, out, _ = health("--queue", queue_name, "--json")
        report = json.loads(out)
        assert report["healthy"] is True
        assert [(w["name"], w["alive"]) for w in report["queues"][queue_name]] == [
            ("live", True),
            ("gone", False),
        ]
    finally:
        worker.close()
        await asyncio.wait_for(task, 15)


def test_unreachable_redis_is_unhealthy(settings: Any, queue_name: str) -> None:
    settings.BULLQ = {
        **settings.BULLQ,
        "CONNECTIONS": {"default": {"URL": f"redis://:pw@127.0.0.1:{free_port()}/0"}},
    }
    code, _, err = health("--queue", queue_name)
    assert code == 1
    assert "cannot reach Redis at redis://:***@127.0.0.1:" in err and ":pw@" not in err


def test_real_runworker_beats_and_unregisters_on_sigterm(queue_name: str) -> None:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "django", "runworker", queue_name, "--name", "probe", "-v", "0"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while health("--queue", queue_name, "--worker", "probe")[0] != 0:
            assert time.monotonic() < deadline, "runworker wrote no heartbeat"
            assert proc.poll() is None
            time.sleep(0.1)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(20) == 0
        code, out, _ = health("--queue", queue_name)
        assert code == 1 and "0 alive, 0 stale" in out  # a clean stop leaves nothing stale
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_django_options_are_taken_after_the_subcommand_too() -> None:
    # new-user trial: `manage.py bullq health --settings X` said "unrecognized arguments",
    # though `manage.py runworker ... --settings X` takes them
    from django_bullq.management.commands.bullq import Command

    parser = Command().create_parser("manage.py", "bullq")
    after = parser.parse_args(["health", "--settings", "site.settings", "-v", "2", "--traceback"])
    assert (after.subcommand, after.settings, after.verbosity, after.traceback) == (
        "health",
        "site.settings",
        2,
        True,
    )
    before = parser.parse_args(["-v", "3", "health"])
    assert before.verbosity == 3  # not reset by the subcommand's own defaults
    plain = parser.parse_args(["health"])
    assert plain.verbosity == 1 and plain.settings is None


def test_a_queue_name_no_queue_may_have_is_a_command_error() -> None:
    # new-user trial: `bullq health --queue 'a:b'` ended in a traceback
    from django.core.management import CommandError

    with pytest.raises(CommandError, match=r"--queue 'a:b': queue name 'a:b' must not contain"):
        call_command("bullq", "health", "--queue", "a:b", stdout=io.StringIO())
