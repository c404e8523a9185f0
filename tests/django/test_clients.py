"""Pluggable clients: a worker and a producer on valkey-py, and on a user-built redis-py client,
configured through ``BULLQ["CONNECTIONS"]`` (CLIENT_CLASS, CLIENT_FACTORY)."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
import redis
import redis.asyncio
import redis.asyncio.retry
import redis.backoff
import redis.retry
import valkey
import valkey.asyncio
import valkey.exceptions
from django.test import override_settings

from django_bullq import Job, conf
from django_bullq.core.errors import ConnectionConfigError, RedisUnavailableError
from django_bullq.core.queue import Queue
from django_bullq.exceptions import ConfigurationError
from tests.support.redis_server import free_port
from tests.support.tcp_proxy import TcpProxy
from tests.support.workerkit import events, make_worker, run_until

#: Every client CLIENT_FACTORY built: (kind, client, options it was given).
BUILT: list[tuple[str, Any, dict[str, Any]]] = []


class CountingPool(redis.ConnectionPool):
    """A project's own pool class (sync): counts the connections it makes."""

    made = 0

    def make_connection(self) -> Any:
        type(self).made += 1
        return super().make_connection()


class CountingAsyncPool(redis.asyncio.ConnectionPool):
    """The same for asyncio."""

    made = 0

    def make_connection(self) -> Any:
        type(self).made += 1
        return super().make_connection()


def build_client(url: str, options: dict[str, Any], kind: str) -> Any:
    """A CLIENT_FACTORY as a project writes one: its pool class, Retry and health checks."""
    kwargs = {**options, "health_check_interval": 10}
    if kind == "sync":
        kwargs["retry"] = redis.retry.Retry(redis.backoff.ExponentialBackoff(cap=0.5), 3)
        client: Any = redis.Redis(connection_pool=CountingPool.from_url(url, **kwargs))
    else:
        kwargs["retry"] = redis.asyncio.retry.Retry(redis.backoff.ExponentialBackoff(cap=0.5), 3)
        client = redis.asyncio.Redis(connection_pool=CountingAsyncPool.from_url(url, **kwargs))
    BUILT.append((kind, client, options))
    return client


def _until(condition: Callable[[], bool], timeout: float, what: str) -> Any:
    async def wait() -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            assert time.monotonic() < deadline, f"{what}: not within {timeout} s"
            await asyncio.sleep(0.02)

    return wait()


def _add_from_threads(queue: Queue, count: int) -> None:
    """``count`` adds from 4 threads at once: they go through the queue's ThreadPipeline."""
    barrier = threading.Barrier(4)

    def add(n: int) -> None:
        barrier.wait()
        for i in range(count // 4):
            queue.add("double", {"i": n * 100 + i})

    threads = [threading.Thread(target=add, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


async def _run_jobs(queue: Queue, r: redis.Redis) -> Any:
    """Add jobs one by one from threads and in bulk, run a worker until all completed, and
    check returns and events; returns the worker."""
    _add_from_threads(queue, 20)
    queue.add_bulk([("double", {"i": i}) for i in range(1000, 1020)])

    async def double(job: Job) -> int:
        await asyncio.sleep(0)
        return int(job.data["i"]) * 2

    worker = make_worker(queue, double, concurrency=4)
    await run_until(worker, lambda: queue.get_job_counts("completed")["completed"] == 40)
    assert queue.get_job_counts() == {
        **{state: 0 for state in queue.get_job_counts()},
        "completed": 40,
    }
    assert {queue.get_job(str(n)).returnvalue for n in range(21, 41)} == {
        i * 2 for i in range(1000, 1020)
    }
    assert len(events(r, queue, "completed")) == 40
    assert len(events(r, queue, "added")) + len(events(r, queue, "waiting")) >= 40
    # the calls went through the pipelines, not one by one
    assert queue._thread_pipeline is not None and queue._thread_pipeline.writes > 0
    assert worker._pipe.writes > 0
    return worker


async def test_a_worker_runs_jobs_on_a_valkey_py_client(
    redis_url: str, queue_name: str, r: redis.Redis
) -> None:
    settings = {"CONNECTIONS": {"default": {"URL": redis_url, "CLIENT_CLASS": "valkey.Valkey"}}}
    with override_settings(BULLQ=settings):
        queue = conf.get_queue(queue_name)
        assert type(queue.client) is valkey.Valkey
        assert type(queue.aclient) is valkey.asyncio.Valkey
        try:
            worker = await _run_jobs(queue, r)
            assert type(worker._blocking) is valkey.asyncio.Valkey  # the marker wait's client
        finally:
            queue.close()


async def test_a_worker_runs_jobs_on_a_user_built_redis_py_client(
    redis_url: str, queue_name: str, r: redis.Redis
) -> None:
    BUILT.clear()
    CountingPool.made = CountingAsyncPool.made = 0
    entry = {
        "URL": redis_url,
        "OPTIONS": {"socket_timeout": 20.0},
        "CLIENT_FACTORY": "tests.django.test_clients.build_client",
    }
    with override_settings(BULLQ={"CONNECTIONS": {"default": entry}}):
        queue = conf.get_queue(queue_name)
        try:
            worker = await _run_jobs(queue, r)
        finally:
            queue.close()
    kinds = [kind for kind, _, _ in BUILT]
    assert kinds.count("sync") == 1 and "async" in kinds and "blocking" in kinds
    sync = next(client for kind, client, _ in BUILT if kind == "sync")
    assert sync is queue.client
    assert isinstance(sync.connection_pool, CountingPool)
    assert sync.connection_pool.connection_kwargs["health_check_interval"] == 10
    assert isinstance(sync.get_retry(), redis.retry.Retry)
    blocking_options = next(opts for kind, _, opts in BUILT if kind == "blocking")
    # the marker wait's client: a socket timeout above its longest block, the rest as given
    assert blocking_options["socket_timeout"] >= worker.opts.drain_delay + 5
    assert next(opts for kind, _, opts in BUILT if kind == "sync")["socket_timeout"] == 20.0
    # the pipelines made their connections with the project's pools
    assert CountingPool.made >= 1 and CountingAsyncPool.made >= 1


def test_a_client_class_that_cannot_be_imported_is_a_configuration_error(
    redis_url: str,
) -> None:
    entry = {"URL": redis_url, "CLIENT_CLASS": "valkey.NoSuchClient"}
    with (
        override_settings(BULLQ={"CONNECTIONS": {"default": entry}}),
        pytest.raises(ConfigurationError, match="CLIENT_CLASS.*cannot import"),
    ):
        conf.get_connection()


def test_a_valkey_py_producer_reports_an_unreachable_server() -> None:
    """valkey-py's own ConnectionError is recognised: the producer raises
    RedisUnavailableError, as it does on redis-py."""
    url = f"redis://127.0.0.1:{free_port()}/0"
    entry = {"URL": url, "CLIENT_CLASS": "valkey.Valkey", "OPTIONS": {"socket_connect_timeout": 1}}
    with override_settings(BULLQ={"CONNECTIONS": {"default": entry}}):
        queue = conf.get_queue("nobody-home")
        with pytest.raises(RedisUnavailableError, match="cannot reach Redis") as caught:
            queue.add("x", {})
        assert isinstance(caught.value.__cause__, valkey.exceptions.ConnectionError)
        queue.close()


async def test_a_valkey_py_worker_rides_out_an_outage(
    redis_url: str, queue_name: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A cut network under a valkey-py worker is an outage (logged once, retried), not a
    crash, and jobs added meanwhile run once it is back."""
    port = int(redis_url.rsplit(":", 1)[1].split("/")[0])
    proxy = TcpProxy(port)
    entry = {"URL": f"redis://127.0.0.1:{proxy.port}/0", "CLIENT_CLASS": "valkey.Valkey"}
    direct = Queue(queue_name, redis_url)
    caplog.set_level(logging.INFO, logger="django_bullq")
    with override_settings(BULLQ={"CONNECTIONS": {"default": entry}}):
        queue = conf.get_queue(queue_name)
        worker = make_worker(queue, lambda job: job.data, name="valkey-outage")
        task = asyncio.create_task(worker.arun())
        try:
            first = direct.add("echo", 1)
            await _until(lambda: direct.get_job_state(first.id) == "completed", 10, "first job")
            proxy.cut()
            during = direct.add("echo", 2)
            address = f"127.0.0.1:{proxy.port}"
            await _until(
                lambda: any(
                    f"Redis at {address} unreachable, retrying" in m.getMessage()
                    for m in caplog.records
                ),
                10,
                "outage noticed",
            )
            with pytest.raises(RedisUnavailableError):
                queue.add("echo", 3)  # the producer side sees it as an outage too
            proxy.restore()
            await _until(lambda: direct.get_job_state(during.id) == "completed", 15, "after")
            assert not task.done()
        finally:
            worker.close()
            await asyncio.wait_for(task, 15)
            queue.close()
            direct.close()
            proxy.close()
    loud = [m.getMessage() for m in caplog.records if m.levelno >= logging.WARNING]
    assert not [m for m in loud if "crashed" in m or "Traceback" in m], loud


class ForeignClient:
    """A client class of a library django_bullq does not know (never built here)."""

    @classmethod
    def from_url(cls, url: str, **options: Any) -> ForeignClient:
        return cls()


def _check(entry: dict[str, Any]) -> list[tuple[str, str]]:
    from django_bullq.checks import check_clients

    with override_settings(BULLQ={"CONNECTIONS": {"default": entry}}):
        return [(m.id or "", m.msg) for m in check_clients()]


def test_the_check_accepts_valkey_py_and_redis_py_classes_and_factories(redis_url: str) -> None:
    assert _check({"URL": redis_url, "CLIENT_CLASS": "valkey.Valkey"}) == []
    assert _check({"URL": redis_url, "ASYNC_CLIENT_CLASS": "redis.asyncio.Redis"}) == []
    assert _check({"URL": redis_url, "CLIENT_FACTORY": build_client}) == []
    assert (
        _check({"URL": redis_url, "CLIENT_FACTORY": "tests.django.test_clients.build_client"}) == []
    )


def test_the_check_reports_what_a_client_class_cannot_do(redis_url: str) -> None:
    (found,) = _check({"URL": redis_url, "CLIENT_CLASS": "valkey.NoSuch"})
    assert found[0] == "django_bullq.E013" and "cannot import 'valkey.NoSuch'" in found[1]
    (found,) = _check({"URL": redis_url, "CLIENT_CLASS": "collections.OrderedDict"})
    assert found[0] == "django_bullq.E013" and "from_url" in found[1]
    (found,) = _check({"URL": redis_url, "CLIENT_FACTORY": "math.pi"})
    assert found[0] == "django_bullq.E013" and "not callable" in found[1]
    (found,) = _check({"URL": redis_url, "CLIENT_CLASS": "tests.django.test_clients.ForeignClient"})
    assert found[0] == "django_bullq.W005"
    for gap in ("run the Lua scripts", "bzpopmin", "connection errors", "pipeline its calls"):
        assert gap in found[1], gap
    both = {"URL": redis_url, "CLIENT_CLASS": "valkey.Valkey", "CLIENT_FACTORY": build_client}
    assert [m[0] for m in _check(both)] == ["django_bullq.W005"]


def test_a_factory_building_a_foreign_client_is_logged_and_not_pipelined(
    redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    from django_bullq.core.autopipeline import AutoPipeline
    from django_bullq.core.clients import can_pipeline
    from django_bullq.core.connection import Connection

    connection = Connection(url=redis_url, client_factory=lambda url, opts, kind: ForeignClient())
    with caplog.at_level(logging.WARNING, logger="django_bullq.connection"):
        client = connection.sync_client()
        connection.sync_client()
    assert isinstance(client, ForeignClient) and not can_pipeline(client)
    said = [r.getMessage() for r in caplog.records if "ForeignClient" in r.getMessage()]
    assert len(said) == 1 and "run the Lua scripts" in said[0]
    assert not AutoPipeline(client, None).enabled  # type: ignore[arg-type]
    assert can_pipeline(redis.Redis.from_url(redis_url))
    assert can_pipeline(valkey.Valkey.from_url(redis_url))


def test_valkey_py_classes_are_refused_on_redis_cluster() -> None:
    """valkey-py 6's ValkeyCluster refuses the MULTI pipelines django_bullq's reads send
    (``transaction is deprecated in cluster mode``): said by the check and at first use."""
    entry = {"URL": "redis+cluster://127.0.0.1:7000", "CLIENT_CLASS": "valkey.Valkey"}
    (found,) = _check(entry)
    assert found[0] == "django_bullq.E013" and "ValkeyCluster refuses MULTI" in found[1]
    with (
        override_settings(BULLQ={"CONNECTIONS": {"default": entry}}),
        pytest.raises(ConnectionConfigError, match="keep redis-py's classes"),
    ):
        conf.get_connection().sync_client()


async def test_a_ready_valkey_py_client_is_a_connection(redis_url: str, queue_name: str) -> None:
    """Queue(name, valkey.Valkey(...)): its asyncio twin is valkey-py's too."""
    client = valkey.Valkey.from_url(redis_url)
    queue = Queue(queue_name, client)
    try:
        job = queue.add("double", {"i": 4})
        assert queue.client is client and type(queue.aclient) is valkey.asyncio.Valkey
        worker = make_worker(queue, lambda job: job.data["i"] * 2)
        await run_until(worker, lambda: queue.get_job_state(job.id) == "completed")
        assert queue.get_job(job.id).returnvalue == 8
    finally:
        queue.close()


async def test_a_valkey_py_connection_serves_sentinel(queue_name: str) -> None:
    """redis+sentinel:// on a valkey-py connection: valkey-py's Sentinel finds the master; a
    job is added, run and completed through the pipelines."""
    import valkey.asyncio.sentinel
    import valkey.sentinel

    from tests.support.redis_sentinel import SentinelSet

    deployment = SentinelSet().start()
    try:
        entry = {"URL": deployment.url, "CLIENT_CLASS": "valkey.Valkey"}
        with override_settings(BULLQ={"CONNECTIONS": {"default": entry}}):
            queue = conf.get_queue(queue_name)
            try:
                assert isinstance(
                    queue.client.connection_pool, valkey.sentinel.SentinelConnectionPool
                )
                assert isinstance(
                    queue.aclient.connection_pool, valkey.asyncio.sentinel.SentinelConnectionPool
                )
                job = queue.add("double", {"i": 5})
                worker = make_worker(queue, lambda job: job.data["i"] * 2)
                await run_until(worker, lambda: queue.get_job_state(job.id) == "completed")
                assert queue.get_job(job.id).returnvalue == 10
                assert worker._pipe.enabled and worker._pipe.writes > 0
            finally:
                # closed on this loop, not left to the garbage collector as the queue's asyncio
                # clients are: valkey-py 6's asyncio Sentinel connection cannot say its repr
                # once its pool is gone, which the ResourceWarning of an unclosed one needs
                # ("Exception ignored in __del__: ReferenceError")
                await queue.apipeline.aclose()
                await queue.aclient.aclose()
                queue.close()
    finally:
        deployment.cleanup()
