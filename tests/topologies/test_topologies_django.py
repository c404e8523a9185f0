"""Redis topologies from ``settings.BULLQ``, through ``@task`` and the runworker code path:
AUTH / ACL / TLS connections, queues sharded across two Redis servers, Redis Cluster
(issue 6, scopes 4 and 5)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest
from django.core.checks import run_checks
from django.test import override_settings

from django_bullq.conf import ConfigurationError, get_connection, get_queue
from django_bullq.producer.flows import add_flow
from tests.support.helpers_django import burst
from tests.support.redis_cluster import RedisCluster
from tests.support.redis_nodes import RedisNode
from tests.support.redis_security import (
    ACL_PASSWORD,
    ACL_USER,
    PASSWORD,
    acl_server,
    password_server,
    tls_server,
)
from tests.testapp import tasks as sample

pytestmark = pytest.mark.django_layer

SECRET = quote(PASSWORD, safe="")


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, RedisNode]]:
    started: dict[str, RedisNode] = {}
    try:
        started["auth"] = password_server()
        started["acl"] = acl_server()
        started["tls"] = tls_server(tmp_path_factory.mktemp("tls"), password=PASSWORD)
        started["shard_a"] = RedisNode().start()
        started["shard_b"] = RedisNode().start()
        yield started
    finally:
        for node in started.values():
            node.cleanup()


def connection_settings(kind: str, node: RedisNode) -> dict[str, Any]:
    if kind == "auth":
        return {"URL": f"redis://:{SECRET}@127.0.0.1:{node.port}/0"}
    if kind == "acl":
        return {
            "URL": f"redis://127.0.0.1:{node.port}/0",
            "OPTIONS": {"username": ACL_USER, "password": ACL_PASSWORD},
        }
    ca = str(node.certs.ca)  # type: ignore[attr-defined]
    return {
        "URL": f"rediss://127.0.0.1:{node.port}/0",
        "OPTIONS": {"password": PASSWORD, "ssl_ca_certs": ca},
    }


@pytest.mark.parametrize("kind", ["auth", "acl", "tls"])
def test_secured_connection_from_settings_end_to_end(
    kind: str, servers: dict[str, RedisNode], queue_name: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    bullq = {"CONNECTIONS": {"default": connection_settings(kind, servers[kind])}}
    with override_settings(BULLQ=bullq):
        assert not [m for m in run_checks() if m.id and m.id.startswith("django_bullq")]
        job = sample.add.using(queue=queue_name).enqueue(2, b=3)
        group = burst(queue_name)
        assert job.wait(timeout=5) == 5
        assert group.workers[0].processed == 1
        shown = repr(get_connection()) + repr(get_queue(queue_name).connection)
    for text in (caplog.text, shown):
        assert PASSWORD not in text and SECRET not in text and ACL_PASSWORD not in text


def test_queues_sharded_across_two_redis_servers(
    servers: dict[str, RedisNode], redis_url: str
) -> None:
    """QUEUES map each queue to a connection alias; tasks, workers and results follow."""
    a, b = servers["shard_a"], servers["shard_b"]
    bullq = {
        "CONNECTIONS": {
            "default": redis_url,
            "a": f"redis://127.0.0.1:{a.port}/0",
            "b": f"redis://127.0.0.1:{b.port}/0",
        },
        "QUEUES": {"shard-a": {"CONNECTION": "a"}, "shard-b": {"CONNECTION": "b"}},
    }
    with override_settings(BULLQ=bullq):
        on_a = [sample.add.using(queue="shard-a").enqueue(i, b=1) for i in range(5)]
        on_b = [sample.add.using(queue="shard-b").enqueue(i, b=100) for i in range(5)]
        group = burst("shard-a", "shard-b")
        assert [j.wait(timeout=5) for j in on_a] == [1, 2, 3, 4, 5]
        assert [j.wait(timeout=5) for j in on_b] == [100, 101, 102, 103, 104]
        assert sorted(w.processed for w in group.workers) == [5, 5]
        with pytest.raises(ConfigurationError, match="one flow must stay on one connection"):
            add_flow(
                {
                    **sample.add.using(queue="shard-a").node(1),
                    "children": [sample.add.using(queue="shard-b").node(2)],
                }
            )
    client_a, client_b = a.client(), b.client()
    try:
        assert client_a.exists("bull:shard-a:meta") and not client_a.exists("bull:shard-b:meta")
        assert client_b.exists("bull:shard-b:meta") and not client_b.exists("bull:shard-a:meta")
        assert client_a.hget(f"bull:shard-a:{on_a[0].id}", "returnvalue") == "1"
        assert client_a.zcard("bull:shard-a:completed") == 5
        assert client_b.zcard("bull:shard-b:completed") == 5
        assert not client_a.exists("bull:shard-a:waiting-children")  # the refused flow wrote none
    finally:
        client_a.close()
        client_b.close()


def test_case_b32_tasks_and_flows_on_cluster_from_settings(
    redis_cluster: RedisCluster, queue_name: str
) -> None:
    bullq = {"CONNECTIONS": {"default": redis_cluster.url}, "PREFIX": "{bullq}"}
    with override_settings(BULLQ=bullq):
        assert not [m for m in run_checks() if m.id and m.id.startswith("django_bullq")]
        jobs = [sample.add.using(queue=queue_name).enqueue(i, b=i) for i in range(3)]
        root = add_flow(
            {
                **sample.add.using(queue=queue_name).node(10, b=1),
                "children": [sample.add.using(queue=f"{queue_name}-c").node(1, b=1)],
            }
        )
        burst(queue_name, f"{queue_name}-c")
        burst(queue_name)  # the parent became runnable when its child completed
        assert [j.wait(timeout=5) for j in jobs] == [0, 2, 4]
        assert root.job.wait(timeout=5) == 11
        get_queue(queue_name).obliterate(force=True)
        get_queue(f"{queue_name}-c").obliterate(force=True)


def test_cluster_prefix_without_tag_is_a_check_error_and_a_clear_exception(
    redis_cluster: RedisCluster, queue_name: str
) -> None:
    with override_settings(BULLQ={"CONNECTIONS": {"default": redis_cluster.url}}):
        assert "django_bullq.E009" in {m.id for m in run_checks()}
        with pytest.raises(ValueError, match="hash tag"):
            sample.add.using(queue=queue_name).enqueue(1)


def test_sentinel_url_error_does_not_show_its_password() -> None:
    url = f"redis+sentinel://:{SECRET}@127.0.0.1:26379"
    with (
        override_settings(BULLQ={"CONNECTIONS": {"default": url}}),
        pytest.raises(ConfigurationError) as bad,
    ):
        get_queue("q")
    assert SECRET not in str(bad.value) and PASSWORD not in str(bad.value)
    assert "***" in str(bad.value)
