"""Make sure a Redis answers at a URL, starting Debian's ``redis-server`` locally when none does.

Used by ``make redis-up`` (and so ``make demo``)::

    python -m django_bullq.devredis redis://127.0.0.1:6379/0

Exit codes: 0 a Redis answers (already, or after we started one); 1 none answers and none could
be started (remote host, ``redis-server`` missing, start failure); 2 bad usage or URL.

It only ever starts a server on a loopback address, daemonized, with its working directory,
log file and pid file under ``<tmp>/django_bullq-redis-<port>/`` and no persistence. It never
writes to or flushes a server that already answers.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

import redis

from .core.connection import redact_url
from .core.deprecation import renamed_kwargs
from .exceptions import BadURLError, DevRedisError

LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
#: Where Debian puts the binary when ``/usr/sbin`` is not on PATH.
FALLBACK_BINARIES = ("/usr/bin/redis-server", "/usr/sbin/redis-server")
START_TIMEOUT_S = 15.0


@dataclass(frozen=True, slots=True)
class RedisTarget:
    """The parts of a ``redis://`` URL that matter to start a server.

    Attributes:
        url: the URL as given. host: host name or address. port: TCP port.
        password: the password of the URL, or None.
    """

    url: str
    host: str
    port: int
    password: str | None

    @property
    def is_local(self) -> bool:
        """True when the host is a loopback name or address."""
        return self.host in LOCAL_HOSTS


def parse_url(url: str) -> RedisTarget:
    """Split a ``redis://[[user]:password@]host[:port][/db]`` URL.

    Raises:
        BadURLError: another scheme (``rediss://``, ``unix://``) or a malformed URL.
    """
    parts = urlsplit(url)
    shown = redact_url(url)
    if parts.scheme != "redis":
        raise BadURLError(
            f"{shown!r}: only redis:// URLs can be checked or started here "
            f"(not {parts.scheme or 'no scheme'}://)"
        )
    try:
        port = parts.port or 6379
    except ValueError as exc:
        raise BadURLError(f"{shown!r}: bad port ({exc})") from exc
    password = unquote(parts.password) if parts.password else None
    return RedisTarget(url=url, host=parts.hostname or "127.0.0.1", port=port, password=password)


@renamed_kwargs(timeout="timeout_s")
def answers(url: str, timeout_s: float = 1.0) -> bool:
    """True when a Redis at ``url`` replies to PING within ``timeout_s`` seconds.

    (``timeout``, the old name of ``timeout_s``, is still accepted with a DeprecationWarning.)

    Raises:
        DevRedisError: something answers but refuses us (wrong or missing password), or it
            is not a Redis.
    """
    client = redis.Redis.from_url(url, socket_connect_timeout=timeout_s, socket_timeout=timeout_s)
    shown = redact_url(url)  # messages never carry the password
    try:
        return bool(client.ping())
    except (redis.AuthenticationError, redis.exceptions.NoPermissionError) as exc:
        raise DevRedisError(
            f"a Redis answers at {shown} but refuses the credentials: {exc}"
        ) from exc
    except redis.ResponseError as exc:
        if "NOAUTH" in str(exc):
            raise DevRedisError(
                f"a Redis answers at {shown} but wants a password: put it in the "
                f"URL (redis://:password@host:port/0)"
            ) from exc
        raise
    except (redis.ConnectionError, redis.TimeoutError, OSError):
        return False
    except redis.RedisError as exc:
        raise DevRedisError(
            f"something answers at {shown} but it does not speak Redis: {exc}"
        ) from exc
    finally:
        client.close()


def find_redis_server() -> str:
    """Path of the ``redis-server`` binary.

    Raises:
        DevRedisError: it is not installed (with the command that installs it).
    """
    found = shutil.which("redis-server")
    if found:
        return found
    for candidate in FALLBACK_BINARIES:
        if Path(candidate).is_file():
            return candidate
    raise DevRedisError(
        "redis-server is not installed: run `make redis-server` (it runs "
        "`apt-get install redis-server`) or install Redis yourself"
    )


@renamed_kwargs(timeout="timeout_s")
def start_server(target: RedisTarget, timeout_s: float = START_TIMEOUT_S) -> Path:
    """Start a daemonized ``redis-server`` for ``target`` and wait until it answers.

    Args:
        target: the parts of a local URL.
        timeout_s: seconds to wait for the first PONG (old name ``timeout``, deprecated).

    Returns:
        The server's directory (log file ``redis.log``, pid file ``redis.pid``).

    Raises:
        DevRedisError: remote host, binary missing, start failure or no answer in time.
    """
    if not target.is_local:
        raise DevRedisError(
            f"nothing answers at {redact_url(target.url)}, and {target.host!r} "
            "is not this machine: start that Redis yourself or point REDIS_URL "
            "elsewhere"
        )
    binary = find_redis_server()
    workdir = Path(tempfile.gettempdir()) / f"django_bullq-redis-{target.port}"
    workdir.mkdir(parents=True, exist_ok=True)
    bind = "::1" if target.host == "::1" else "127.0.0.1"
    args = [
        binary,
        "--port",
        str(target.port),
        "--bind",
        bind,
        "--daemonize",
        "yes",
        "--dir",
        str(workdir),
        "--logfile",
        str(workdir / "redis.log"),
        "--pidfile",
        str(workdir / "redis.pid"),
        "--save",
        "",
        "--appendonly",
        "no",
    ]
    if target.password:
        args += ["--requirepass", target.password]
    done = subprocess.run(args, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise DevRedisError(
            f"redis-server failed to start (exit {done.returncode}): "
            f"{(done.stderr or done.stdout).strip()}"
        )
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if answers(target.url, timeout_s=0.5):
            return workdir
        time.sleep(0.1)
    raise DevRedisError(
        f"redis-server started but {redact_url(target.url)} did not answer "
        f"within {timeout_s:.0f} s; see {workdir / 'redis.log'}"
    )


def ensure(url: str) -> str:
    """Make sure a Redis answers at ``url``. Returns a line saying what happened.

    Raises:
        DevRedisError: none answers and none could be started.
    """
    target = parse_url(url)
    if answers(url):
        return f"Redis answers at {redact_url(url)}"
    workdir = start_server(target)
    return f"started redis-server at {redact_url(url)} (log: {workdir / 'redis.log'})"


def main(argv: list[str] | None = None) -> int:
    """Command line entry point: ``python -m django_bullq.devredis URL``."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or args[0] in ("-h", "--help"):
        print("usage: python -m django_bullq.devredis redis://HOST:PORT/DB", file=sys.stderr)
        return 2
    try:
        print(ensure(args[0]))
    except DevRedisError as exc:
        print(f"devredis: {exc}", file=sys.stderr)
        return 2 if isinstance(exc, BadURLError) else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
