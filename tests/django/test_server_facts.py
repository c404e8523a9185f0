"""Server facts (name, version, memory policy, persistence, I/O threads) in the capacity
report and the admin overview, on a real redis-server: with CONFIG GET allowed and refused."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator

import pytest
import redis
from django.core.management import call_command
from django.test import Client, override_settings
from django.urls import reverse

from django_bullq.admin.server import from_info
from django_bullq.core.server_info import UNKNOWN, read_server_info
from tests.support.admin_users import staff_user
from tests.support.redis_server import RedisServer


@pytest.fixture(scope="module")
def aof_server() -> Iterator[RedisServer]:
    """A server with AOF on (appendfsync everysec), and an ACL user who may not run CONFIG."""
    server = RedisServer(persistent=True, appendfsync="everysec").start()
    admin = redis.Redis(port=server.port)
    admin.execute_command(
        "ACL", "SETUSER", "noconfig", "on", ">secret", "~*", "&*", "+@all", "-config"
    )
    admin.close()
    yield server
    server.cleanup()


def _refused_url(server: RedisServer) -> str:
    return f"redis://noconfig:secret@127.0.0.1:{server.port}/0"


def test_facts_with_config_allowed(aof_server: RedisServer) -> None:
    client = redis.Redis(port=aof_server.port, decode_responses=True)
    try:
        info = read_server_info(client)
        version = client.info("server")["redis_version"]
        assert (info.server, info.version, info.mode) == ("Redis", version, "standalone")
        assert info.config_readable
        assert info.persistence.aof_enabled and info.persistence.appendfsync == "everysec"
        assert info.persistence.rdb_save == ""  # the test servers run with --save ""
        assert info.persistence.describe() == "AOF on (appendfsync everysec), RDB save off"
        assert info.io_threads == "1" and info.io_threads_active == 0
        assert info.policy == "noeviction" and not info.policy_warning and info.warnings() == []
        client.config_set("maxmemory-policy", "allkeys-lru")
        client.config_set("save", "3600 1")
        try:
            changed = read_server_info(client)
            assert changed.policy_warning
            assert any("allkeys-lru" in w and "noeviction" in w for w in changed.warnings())
            assert changed.persistence.rdb_save == "3600 1"
        finally:
            client.config_set("maxmemory-policy", "noeviction")
            client.config_set("save", "")
    finally:
        client.close()


def test_facts_with_config_refused_fall_back_to_info(aof_server: RedisServer) -> None:
    client = redis.Redis.from_url(_refused_url(aof_server))
    try:
        with pytest.raises(redis.exceptions.NoPermissionError):
            client.config_get("save")
        info = read_server_info(client)
    finally:
        client.close()
    assert info.server == "Redis" and info.version
    assert not info.config_readable
    assert info.persistence.aof_enabled  # INFO persistence says so without CONFIG
    assert (info.persistence.appendfsync, info.persistence.rdb_save, info.io_threads) == (
        UNKNOWN,
        UNKNOWN,
        UNKNOWN,
    )
    assert info.io_threads_active == 0  # INFO stats reports it
    assert any("CONFIG GET is not allowed" in w for w in info.warnings())


def test_valkey_info_is_named_valkey_with_its_io_threads() -> None:
    """Valkey 9's INFO fields (server_name, valkey_version, server_mode, io_threads_active)
    and its CONFIG GET io-threads, as a valkey-server 9.1.2 answers them."""
    info = {
        "redis_version": "7.2.4",
        "server_name": "valkey",
        "valkey_version": "9.1.2",
        "server_mode": "standalone",
        "io_threads_active": 1,
        "aof_enabled": 0,
        "maxmemory_policy": "volatile-lru",
    }
    facts = from_info("v", "redis://127.0.0.1:6390/0", info, {"io-threads": "4", "save": ""})
    assert facts.info is not None
    assert (facts.info.server, facts.info.version, facts.io_threads) == (
        "Valkey",
        "9.1.2",
        "4 (active)",
    )
    assert facts.info.policy_warning and facts.persistence.startswith("AOF off, RDB save off")


def _overview(url: str) -> str:
    client = Client()
    client.force_login(staff_user("view_bullqqueue"))
    with override_settings(BULLQ={"CONNECTIONS": {"default": url}}):
        page = client.get(reverse("admin:django_bullq_bullqqueue_changelist"))
    assert page.status_code == 200
    return page.content.decode()


@pytest.mark.django_db
def test_the_admin_shows_persistence_and_io_threads(aof_server: RedisServer) -> None:
    body = _overview(f"redis://127.0.0.1:{aof_server.port}/0")
    assert "AOF on (appendfsync everysec), RDB save off" in body
    assert "<td data-bullq-io-threads>1 (inactive)</td>" in body
    assert "CONFIG GET refused" not in body


@pytest.mark.django_db
def test_the_admin_says_unknown_when_config_is_refused(aof_server: RedisServer) -> None:
    body = _overview(_refused_url(aof_server))
    assert "AOF on (appendfsync unknown), RDB save unknown" in body
    assert "CONFIG GET refused" in body
    assert "<td data-bullq-io-threads>unknown (inactive)</td>" in body
    assert "unreachable" not in body.split('id="bullq-servers"')[1].split("</table>")[0]


def test_the_capacity_report_names_the_server(redis_url: str) -> None:
    out = io.StringIO()
    call_command("bullq", "capacity", "--jobs", "20", "--concurrency", "2", stdout=out)
    text = out.getvalue()
    assert "server" in text and "Redis 7" in text
    assert "memory policy" in text and "noeviction" in text
    assert "I/O threads" in text and "persistence" in text
    out = io.StringIO()
    call_command("bullq", "capacity", "--jobs", "20", "--json", stdout=out)
    server = json.loads(out.getvalue())["server"]
    assert server["server"] == "Redis" and server["policy"] == "noeviction"
    assert server["config_readable"] is True and server["io_threads"] == "1"
