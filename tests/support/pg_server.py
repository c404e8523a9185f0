"""Start a private PostgreSQL cluster on a free port for the B29 test (never the machine's 5432).

Uses Debian's server binaries (``/usr/lib/postgresql/<version>/bin``). PostgreSQL refuses to
run as root, so as root the cluster is created and run as the ``postgres`` system user.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.support.redis_server import free_port

ROOT = Path(__file__).resolve().parents[2]


def _bin_dir() -> str:
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"),
        key=lambda p: int(p.split("/")[4]) if p.split("/")[4].isdigit() else 0,
    )
    if not found:
        raise RuntimeError("PostgreSQL server binaries not found: apt-get install postgresql")
    return os.path.dirname(found[-1])


class PostgresServer:
    """A throw-away cluster with trust auth for user ``bullq`` on 127.0.0.1:<free port>."""

    user = "bullq"

    def __init__(self) -> None:
        self.bin = _bin_dir()
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="bullq-pg-")
        self.data = os.path.join(self.dir, "data")
        self._as_postgres = os.geteuid() == 0

    def _run(self, *args: str) -> None:
        command = list(args)
        if self._as_postgres:
            command = ["runuser", "-u", "postgres", "--", *command]
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def start(self) -> PostgresServer:
        if self._as_postgres:
            shutil.chown(self.dir, "postgres", "postgres")
        self._run(
            f"{self.bin}/initdb", "-D", self.data, "-U", self.user, "-A", "trust", "--no-sync"
        )
        self._run(
            f"{self.bin}/pg_ctl",
            "-D",
            self.data,
            "-w",
            "-l",
            os.path.join(self.dir, "log"),
            "-o",
            f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=off",
            "start",
        )
        deadline = time.monotonic() + 20
        while (
            subprocess.run(
                [f"{self.bin}/pg_isready", "-h", "127.0.0.1", "-p", str(self.port)],
                stdout=subprocess.DEVNULL,
            ).returncode
            != 0
        ):
            if time.monotonic() > deadline:
                raise RuntimeError("private PostgreSQL did not start")
            time.sleep(0.1)
        return self

    @property
    def dsn(self) -> str:
        return f"host=127.0.0.1 port={self.port} user={self.user} dbname=postgres"

    def cleanup(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError):
            self._run(f"{self.bin}/pg_ctl", "-D", self.data, "-m", "immediate", "stop")
        shutil.rmtree(self.dir, ignore_errors=True)


def run_pg_script(
    postgres: PostgresServer, module: str, *args: str, **env_vars: str
) -> dict[str, Any]:
    """Run ``python -m <module> <args>`` under ``tests.settings_pg`` on ``postgres`` (a process
    of its own: Django's database settings are read once per process) and return the JSON
    object its last line of output prints; ``env_vars`` are added to its environment."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings_pg",
        "BULLQ_TEST_PG_PORT": str(postgres.port),
        **env_vars,
    }
    done = subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return report
