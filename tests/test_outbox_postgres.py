"""The outbox relay on a real PostgreSQL: relays racing for the same rows add each job once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from django_bullq.conf import get_queue
from tests.pg_server import PostgresServer

pytestmark = pytest.mark.django_layer

ROOT = Path(__file__).resolve().parent.parent


def test_racing_relays_add_every_row_exactly_once(postgres: PostgresServer,
                                                  queue_name: str) -> None:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings_pg",
           "BULLQ_TEST_PG_PORT": str(postgres.port)}
    done = subprocess.run([sys.executable, "-m", "tests.outbox_race", queue_name, "300", "4"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["left"] == 0
    assert sum(report["added"]) == 300  # no row added by two relays
    assert len([n for n in report["added"] if n]) > 1, "the relays did not compete"
    queue = get_queue(queue_name)
    assert queue.count() == 300
    data = sorted(job.data["args"][0] for job in queue.get_jobs("waiting"))
    assert data == list(range(300))
