"""Start a private ``redis-server`` on a free port for the test session (never the user's 6379)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import redis


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class RedisServer:
    """A ``redis-server`` child process in its own temp directory.

    Args:
        persistent: keep an append-only file so a restart keeps the data (case B27).
        appendfsync: the AOF fsync policy when ``persistent``: ``always`` (every write is on
            disk before Redis answers) or ``everysec`` (Redis' default: up to 1 s lost on a crash).
    """

    def __init__(self, *, persistent: bool = False, appendfsync: str = "always") -> None:
        binary = shutil.which("redis-server") or "/usr/bin/redis-server"
        if not Path(binary).exists():
            raise RuntimeError("redis-server is not installed: run `make test`, which installs it")
        self.binary = binary
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="bullq-redis-")
        self.persistent = persistent
        self.appendfsync = appendfsync
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        args = [
            self.binary,
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--dir",
            self.dir,
            "--save",
            "",
            "--daemonize",
            "no",
            "--loglevel",
            "warning",
        ]
        args += (
            ["--appendonly", "yes", "--appendfsync", self.appendfsync]
            if self.persistent
            else ["--appendonly", "no"]
        )
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        client = redis.Redis(port=self.port)
        deadline = time.monotonic() + 10
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.02)
        client.close()
        return self

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(10)
            self.proc = None

    def kill(self) -> None:
        """SIGKILL the server: a crash, no final fsync (what ``appendfsync`` protects against)."""
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait(10)
            self.proc = None

    def restart(self, *, hard: bool = False) -> None:
        """Stop (SIGTERM: Redis fsyncs and exits; ``hard``: SIGKILL) and start on the same port."""
        if hard:
            self.kill()
        else:
            self.stop()
        self.start()

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


class _External:
    """The server a parent test process started (subprocesses reuse it through the env var)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.port = int(url.rsplit(":", 1)[1].split("/")[0])

    def cleanup(self) -> None:
        pass


_session: RedisServer | _External | None = None


def session_server() -> RedisServer | _External:
    """The one redis-server of this test session, started on first use.

    ``tests/settings.py`` calls this at import (pytest-django imports settings before any
    conftest fixture runs), and exports ``BULLQ_TEST_REDIS_URL`` so that `manage.py runworker`
    subprocesses started by tests talk to the same private server. Under pytest-xdist
    (``make test-fast`` runs ``-n 2``) each worker process starts its own, as tests flush and
    reset their server: ``BULLQ_TEST_REDIS_FOR`` names the xdist worker a URL belongs to, so a
    worker does not take the one its controller exported, and its subprocesses take its own.
    """
    import atexit
    import os

    global _session
    if _session is None:
        owner = os.environ.get("PYTEST_XDIST_WORKER", "")
        url = os.environ.get("BULLQ_TEST_REDIS_URL")
        if url and os.environ.get("BULLQ_TEST_REDIS_FOR", "") == owner:
            _session = _External(url)
        else:
            server = RedisServer().start()
            os.environ["BULLQ_TEST_REDIS_URL"] = server.url
            os.environ["BULLQ_TEST_REDIS_FOR"] = owner
            atexit.register(server.cleanup)
            _session = server
    return _session
