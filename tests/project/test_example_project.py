"""The example project's main job, end to end, against the session's private Redis.

``manage.py migrate`` and ``manage.py weather_report`` run as subprocesses in
``example_project/`` (its own settings module), with ``REDIS_URL`` pointing at the test server
and the SQLite database and the email directory in a temporary directory. The report runs
twice: the import is idempotent, and each run's flaky publish step fails once and then
succeeds on BullMQ's retry.

Marked ``django_layer``: ``make test`` runs it under Django 6 and again under Django 5.2 LTS.
"""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
import redis

pytestmark = pytest.mark.django_layer

EXAMPLE_DIR = Path(__file__).resolve().parents[2] / "example_project"
ROWS_IN_CSV = 1461
JOBS_PER_RUN = 15 + 1 + 2  # import chunks of 100 rows, aggregate, email + publish


def _manage(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=EXAMPLE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=100,
        check=False,
    )


@pytest.fixture
def example_env(redis_url: str, tmp_path: Path) -> dict[str, str]:
    """Environment of the example project: private Redis, temp database and mail directory."""
    env = dict(os.environ)
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "example_project.settings",
            "REDIS_URL": redis_url,
            "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
            "EMAIL_FILE_PATH": str(tmp_path / "sent_emails"),
            "PYTHONWARNINGS": "error::RuntimeWarning",
        }
    )
    return env


@pytest.mark.timeout(240)
def test_weather_report_runs_the_real_batch(
    example_env: dict[str, str], tmp_path: Path, redis_url: str
) -> None:
    """Migrate, run the report twice; check the output, the database, the mail and Redis."""
    migrate = _manage(example_env, "migrate", "--noinput", "-v", "0")
    assert migrate.returncode == 0, migrate.stderr

    first = _manage(example_env, "weather_report")
    assert first.returncode == 0, first.stdout + first.stderr
    out = first.stdout
    assert f"rows imported: {ROWS_IN_CSV} (DailyWeather holds {ROWS_IN_CSV} days)" in out
    assert f"aggregated {ROWS_IN_CSV} days into 48 months and 4 years" in out
    # The yearly table: one line a year, 2012 a leap year.
    assert re.search(r"^\s+2012\s+366\s", out, re.MULTILINE), out
    assert re.search(r"^\s+2015\s+365\s", out, re.MULTILINE), out
    assert re.search(
        r"publish: job \S+ completed after 2 attempts \(of 3\); "
        r"the task ran 2 times",
        out,
    ), out
    assert "publishing endpoint unavailable (simulated outage on attempt 1)" in out
    assert f"this run: {JOBS_PER_RUN} jobs: completed {JOBS_PER_RUN}" in out

    mails = list((tmp_path / "sent_emails").iterdir())
    assert len(mails) == 1
    assert f"email file: {mails[0]}" in out
    mail_text = mails[0].read_text(encoding="utf-8")
    assert "Subject: Seattle weather report #1" in mail_text
    assert "wettest month:" in mail_text

    second = _manage(example_env, "weather_report")
    assert second.returncode == 0, second.stdout + second.stderr
    assert f"DailyWeather holds {ROWS_IN_CSV} days" in second.stdout
    assert "completed after 2 attempts" in second.stdout

    with sqlite3.connect(tmp_path / "db.sqlite3") as db:
        assert db.execute("SELECT COUNT(*) FROM weather_dailyweather").fetchone() == (ROWS_IN_CSV,)
        assert db.execute("SELECT COUNT(*) FROM weather_monthlystats").fetchone() == (48,)
        reports = db.execute(
            "SELECT rows_imported, publish_attempts, published_at IS NOT NULL "
            "FROM weather_report ORDER BY id"
        ).fetchall()
    assert reports == [(ROWS_IN_CSV, 2, 1), (ROWS_IN_CSV, 2, 1)]

    client = redis.Redis.from_url(redis_url, decode_responses=True)
    try:
        assert client.zcard("bull:weather:completed") == 2 * JOBS_PER_RUN
        assert client.zcard("bull:weather:failed") == 0
        assert client.llen("bull:weather:wait") == 0
    finally:
        client.close()
