"""The server under the tests (``BULLQ_TEST_SERVER``): it is the one asked for, and what differs
between Redis 6.2, Redis 7 and Valkey 9 where django_bullq's code or its operators can see it
(docs/redis-topologies.md, "Valkey and Redis versions"). Each test runs on every server and says
what that server does."""

from __future__ import annotations

import pytest
import redis

from tests.support.redis_server import redis_version, server_identity, server_kind


def test_the_session_runs_on_the_server_asked_for(r: redis.Redis) -> None:
    kind = server_kind()
    name, version = server_identity(r)
    expected_name, _, expected_version = kind.partition("-")
    assert name == expected_name
    assert version.startswith(expected_version)
    if kind == "valkey":
        assert version.startswith("9.")


def test_valkey_answers_info_and_lua_as_redis_7_2_4(r: redis.Redis) -> None:
    """Valkey keeps ``redis_version:7.2.4`` (INFO, and ``redis.REDIS_VERSION`` in Lua) for
    clients that gate on it; its own version is ``valkey_version`` beside ``server_name``."""
    info = r.info("server")
    in_lua = r.eval("return redis.REDIS_VERSION", 0)  # Redis >= 7.0; nil (None) on 6.2
    if server_kind() == "valkey":
        assert (info["server_name"], info["redis_version"]) == ("valkey", "7.2.4")
        assert str(info["valkey_version"]).startswith("9.")
        assert in_lua == "7.2.4"
        assert r.eval("return server.call('PING')", 0) == "PONG"  # Valkey's alias of redis
        return
    assert "server_name" not in info and "valkey_version" not in info
    assert in_lua == (str(info["redis_version"]) if redis_version(r) >= (7, 0) else None)


def test_a_script_error_names_its_sha_on_redis_only(r: redis.Redis) -> None:
    """The text a Lua runtime error reaches Python with (a worker's log shows it): Redis 7
    names the script's SHA1, Valkey 9 leaves it out, Redis 6.2 words it another way."""
    sha = r.script_load("return nil + 1")
    with pytest.raises(redis.ResponseError) as caught:
        r.evalsha(sha, 0)
    text = str(caught.value)
    assert "attempt to perform arithmetic on a nil value" in text
    if server_kind() == "valkey":
        assert sha not in text and "script: on @user_script:1." in text
    elif redis_version(r) >= (7, 0):
        assert f"script: {sha}, on @user_script:1." in text
    else:
        assert text.startswith(f"Error running script (call to f_{sha}): @user_script:1: ")
