"""Case B29 on a real PostgreSQL: the worker's connection is killed by the server between jobs.

A private cluster is started on a free port; ``manage.py runworker`` runs as a subprocess with
``tests.settings_pg``. Between two jobs the test terminates the worker's backend with
``pg_terminate_backend`` (what an idle timeout or a PgBouncer restart does), and the next job
must succeed. Then 1,000 jobs must leave at most one connection per worker thread.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest

from django_bullq.conf import get_queue
from tests.support.pg_server import PostgresServer
from tests.testapp import tasks as sample

pytestmark = pytest.mark.django_layer

ROOT = Path(__file__).resolve().parents[2]
CONCURRENCY = 4


def _env(postgres: PostgresServer, max_age: str, *, health_checks: bool) -> dict[str, str]:
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings_pg",
        "BULLQ_TEST_PG_PORT": str(postgres.port),
        "BULLQ_TEST_CONN_MAX_AGE": max_age,
        "BULLQ_TEST_CONN_HEALTH_CHECKS": "1" if health_checks else "0",
        "PYTHONUNBUFFERED": "1",
    }


def _worker_backends(postgres: PostgresServer) -> list[int]:
    with psycopg.connect(postgres.dsn, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = 'postgres' "
            "AND backend_type = 'client backend' AND pid <> pg_backend_pid()"
        )
        return [row[0] for row in rows]


def _terminate_worker_backends(postgres: PostgresServer) -> int:
    with psycopg.connect(postgres.dsn, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = 'postgres' AND backend_type = 'client backend' "
            "AND pid <> pg_backend_pid()"
        ).fetchall()
    return len(rows)


@pytest.mark.parametrize(
    ("max_age", "health_checks"),
    [
        ("0", False),  # Django's default: a connection per job, closed after it
        ("none", True),  # persistent connections, checked before reuse
        ("60", True),
    ],
)
def test_case_b29_idle_workers_connection_goes_away(
    postgres: PostgresServer, queue_name: str, max_age: str, *, health_checks: bool
) -> None:
    env = _env(postgres, max_age, health_checks=health_checks)
    subprocess.run(
        [sys.executable, "-m", "django", "migrate", "--noinput", "-v", "0"],
        cwd=ROOT,
        env=env,
        check=True,
    )
    worker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "django",
            "runworker",
            queue_name,
            "--concurrency",
            str(CONCURRENCY),
            "-v",
            "0",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        first = sample.count_notes.using(queue=queue_name).enqueue()
        assert first.wait(timeout=20) == 0
        if max_age != "0":
            assert _worker_backends(postgres), "a persistent connection should stay open"
        _terminate_worker_backends(postgres)
        time.sleep(0.2)
        second = sample.count_notes.using(queue=queue_name).enqueue()
        assert second.wait(timeout=20) == 0  # not "server closed the connection unexpectedly"

        jobs = get_queue(queue_name).add_bulk(
            [("tests.testapp.tasks.count_notes", {"args": [], "kwargs": {}})] * 1000
        )
        deadline = time.monotonic() + 90
        peak = 0
        while get_queue(queue_name).get_job_counts("completed")["completed"] < 1002:
            assert time.monotonic() < deadline, "1,000 jobs did not finish in time"
            peak = max(peak, len(_worker_backends(postgres)))
            time.sleep(0.05)
        assert all(j.wait(timeout=5) == 0 for j in jobs[-10:])
        if max_age != "0":
            # persistent connections: never more than one per worker thread at any moment
            # (with CONN_MAX_AGE=0 a just-closed backend may linger in pg_stat_activity)
            assert peak <= CONCURRENCY
        time.sleep(0.5)
        assert len(_worker_backends(postgres)) <= CONCURRENCY
    finally:
        worker.send_signal(signal.SIGTERM)
        out, _ = worker.communicate(timeout=30)
    assert worker.returncode == 0, out
