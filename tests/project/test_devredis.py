"""``python -m django_bullq.devredis URL``: the Redis that ``make demo`` needs at REDIS_URL."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from django_bullq import devredis
from tests.support.redis_server import free_port


def _devredis(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "django_bullq.devredis", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_parse_url() -> None:
    """Host, port (default 6379) and password come out of the URL."""
    target = devredis.parse_url("redis://:s%40cret@localhost:6401/2")
    assert (target.host, target.port, target.password, target.is_local) == (
        "localhost",
        6401,
        "s@cret",
        True,
    )
    assert devredis.parse_url("redis://10.0.0.5").port == 6379
    assert not devredis.parse_url("redis://10.0.0.5").is_local


@pytest.mark.parametrize(
    "url", ["rediss://127.0.0.1:6379/0", "unix:///tmp/redis.sock", "redis://127.0.0.1:notaport/0"]
)
def test_bad_urls_exit_2(url: str) -> None:
    """Schemes other than redis:// and malformed ports are usage errors."""
    done = _devredis(url)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("devredis: ")


def test_usage_exits_2() -> None:
    """No URL: the usage line, exit 2."""
    done = _devredis()
    assert done.returncode == 2
    assert "usage:" in done.stderr


def test_a_redis_that_answers_is_left_alone(redis_url: str, r: redis.Redis) -> None:
    """When a Redis answers, it says so, exits 0 and writes nothing."""
    r.set("devredis-probe", "kept")
    r.config_resetstat()
    done = _devredis(redis_url)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"Redis answers at {redis_url}"
    # Other tests' keys expire meanwhile, so count writes instead of keys.
    writes = {
        k: v["calls"]
        for k, v in r.info("commandstats").items()
        if k.removeprefix("cmdstat_") in ("set", "del", "flushdb", "flushall", "hset")
    }
    assert writes == {}
    assert r.get("devredis-probe") == "kept"


def test_remote_host_is_never_started() -> None:
    """Nothing is started for a host that is not this machine."""
    target = devredis.RedisTarget(
        url="redis://redis.example.invalid:6379/0",
        host="redis.example.invalid",
        port=6379,
        password=None,
    )
    with pytest.raises(devredis.DevRedisError, match="is not this machine"):
        devredis.start_server(target)


def test_old_timeout_keyword_still_works() -> None:
    """``timeout`` is the deprecated name of ``timeout_s`` (s), in answers and start_server."""
    with pytest.warns(DeprecationWarning, match="'timeout_s'"):
        assert not devredis.answers(f"redis://127.0.0.1:{free_port()}/0", timeout=0.2)
    target = devredis.parse_url("redis://redis.example.invalid:6379/0")
    with (
        pytest.warns(DeprecationWarning, match="'timeout_s'"),
        pytest.raises(devredis.DevRedisError, match="is not this machine"),
    ):
        devredis.start_server(target, timeout=1.0)


def test_missing_binary_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without redis-server the message names the make target that installs it."""
    monkeypatch.setattr(devredis.shutil, "which", lambda name: None)
    monkeypatch.setattr(devredis, "FALLBACK_BINARIES", ())
    with pytest.raises(devredis.DevRedisError, match="make redis-server"):
        devredis.find_redis_server()


@pytest.fixture
def free_local_url() -> Iterator[str]:
    """A loopback URL nothing listens on; whatever devredis starts there is shut down after."""
    port = free_port()
    url = f"redis://127.0.0.1:{port}/0"
    yield url
    client = redis.Redis(port=port, socket_connect_timeout=1)
    try:
        client.shutdown(nosave=True)
    except redis.ConnectionError:
        pass  # already gone (or never started)
    finally:
        client.close()
    shutil.rmtree(Path(tempfile.gettempdir()) / f"django_bullq-redis-{port}", ignore_errors=True)


def test_starts_a_local_server_when_none_answers(free_local_url: str) -> None:
    """No answer on a loopback port: a daemonized redis-server is started and answers."""
    done = _devredis(free_local_url)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"started redis-server at {free_local_url}")
    client = redis.Redis.from_url(free_local_url)
    try:
        assert client.ping()
        assert client.config_get("bind")["bind"] == "127.0.0.1"
    finally:
        client.close()
    again = _devredis(free_local_url)
    assert again.stdout.strip() == f"Redis answers at {free_local_url}"
