"""Connection faults: Redis down at start, cut mid-run, silent; heartbeats tell the truth."""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from typing import Any

import pytest
import redis

from django_bullq import Queue
from django_bullq.core import heartbeat
from django_bullq.core.connection import CLIENT_DEFAULTS, Connection, RedisUnavailableError
from tests.support.redis_server import RedisServer, free_port
from tests.support.tcp_proxy import TcpProxy
from tests.support.workerkit import make_worker

# --- producers fail fast ---------------------------------------------------------------------


def test_producer_on_dead_redis_raises_clear_error_without_password() -> None:
    port = free_port()
    queue = Queue("q", f"redis://:s3cret@127.0.0.1:{port}/0")
    start = time.monotonic()
    with pytest.raises(RedisUnavailableError) as caught:
        queue.add("email", {"to": "a@example.com"})
    message = str(caught.value)
    assert f"127.0.0.1:{port}" in message
    assert "add job 'email' to queue 'q'" in message
    assert "s3cret" not in message
    assert isinstance(caught.value, redis.ConnectionError)  # existing handlers still catch it
    assert time.monotonic() - start < 10  # refused: no wait for a timeout
    with pytest.raises(RedisUnavailableError, match="add 2 jobs"):
        queue.add_bulk([("a", 1), ("b", 2)])
    queue.close()


async def test_async_producer_on_dead_redis_raises_clear_error() -> None:
    queue = Queue("q", f"redis://127.0.0.1:{free_port()}/0")
    with pytest.raises(RedisUnavailableError, match="cannot reach Redis at redis://127.0.0.1"):
        await queue.aadd("email", {})


def test_clients_get_bounded_timeouts_unless_options_say_otherwise(redis_url: str) -> None:
    kwargs = Connection(redis_url).sync_client().connection_pool.connection_kwargs
    assert kwargs["socket_connect_timeout"] == CLIENT_DEFAULTS["socket_connect_timeout"]
    assert kwargs["socket_timeout"] == CLIENT_DEFAULTS["socket_timeout"]
    own = Connection(redis_url, options={"socket_timeout": 2.5}).sync_client()
    assert own.connection_pool.connection_kwargs["socket_timeout"] == 2.5


def test_silent_server_fails_the_producer_within_its_socket_timeout() -> None:
    """A peer that accepts TCP and never answers (a hung Redis) must not hang a producer."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        port = listener.getsockname()[1]
        conn = Connection(
            f"redis://127.0.0.1:{port}/0",
            options={"socket_timeout": 0.3, "retry_on_timeout": False},
        )
        queue = Queue("q", conn)
        with pytest.raises(RedisUnavailableError, match="TimeoutError"):
            queue.add("email", {})


# --- a TCP proxy the tests can cut -----------------------------------------------------------


async def _until(condition: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout} s")
        await asyncio.sleep(0.05)


def _beats(r: redis.Redis, queue: Queue) -> dict[str, heartbeat.WorkerBeat]:
    return {b.name: b for b in heartbeat.read_workers(r, queue.keys)}


# --- workers wait, resume, and beat only while fetching --------------------------------------


async def test_worker_started_before_redis_waits_then_processes(queue_name: str) -> None:
    server = RedisServer()
    server.port = free_port()
    queue = Queue(queue_name, server.url)
    worker = make_worker(queue, lambda job: job.data * 2, name="early")
    task = asyncio.create_task(worker.arun())
    try:
        await asyncio.sleep(1.5)  # fetches fail and back off meanwhile
        assert not task.done()
        server.start()
        job = await queue.aadd("double", 21)
        r = redis.Redis.from_url(server.url, decode_responses=True)
        await _until(lambda: queue.get_job_state(job.id) == "completed", 15, "job done")
        assert queue.get_job(job.id).returnvalue == 42
        await _until(lambda: "early" in _beats(r, queue), 8, "heartbeat after Redis came up")
        assert _beats(r, queue)["early"].alive
        r.close()
    finally:
        worker.close()
        await asyncio.wait_for(task, 15)
        queue.close()
        server.cleanup()


async def test_network_cut_mid_run_worker_resumes_and_heartbeat_follows(
    redis_url: str, queue_name: str, r: redis.Redis
) -> None:
    port = int(redis_url.rsplit(":", 1)[1].split("/")[0])
    proxy = TcpProxy(port)
    queue = Queue(queue_name, f"redis://127.0.0.1:{proxy.port}/0")
    direct = Queue(queue_name, redis_url)
    worker = make_worker(queue, lambda job: job.data + 1, name="cut")
    task = asyncio.create_task(worker.arun())
    try:
        first = direct.add("inc", 1)
        await _until(lambda: direct.get_job_state(first.id) == "completed", 10, "first job")
        await _until(lambda: "cut" in _beats(r, direct), 8, "first heartbeat")
        proxy.cut()
        during = direct.add("inc", 2)  # added while the worker cannot reach Redis
        await asyncio.sleep(1.0)
        assert direct.get_job_state(during.id) == "waiting"
        # the heartbeat key is not refreshed while cut; force its expiry to see "stale" now
        r.delete(heartbeat.beat_key(direct.keys, "cut"))
        assert not _beats(r, direct)["cut"].alive
        proxy.restore()
        await _until(
            lambda: direct.get_job_state(during.id) == "completed", 15, "job added during the cut"
        )
        after = direct.add("inc", 3)
        await _until(lambda: direct.get_job_state(after.id) == "completed", 10, "job after")
        await _until(lambda: _beats(r, direct)["cut"].alive, 8, "heartbeat back")
        assert not task.done()
    finally:
        worker.close()
        await asyncio.wait_for(task, 15)
        queue.close()
        direct.close()
        proxy.close()


async def test_outage_is_logged_once_then_reconnected(
    redis_url: str, queue_name: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A cut network: one "unreachable, retrying" line and one "reconnected" line for the
    whole outage, not a ``_heartbeat failed`` / ``_check_stalled failed`` line a second."""
    port = int(redis_url.rsplit(":", 1)[1].split("/")[0])
    proxy = TcpProxy(port)
    queue = Queue(queue_name, f"redis://127.0.0.1:{proxy.port}/0")
    direct = Queue(queue_name, redis_url)
    # duties every 0.2 s: a chatty log would write several lines a second during the cut
    worker = make_worker(
        queue, lambda job: job.data, name="outage", stalled_interval=200, lock_duration=400
    )
    caplog.set_level(logging.DEBUG, logger="django_bullq")
    task = asyncio.create_task(worker.arun())
    try:
        first = direct.add("echo", 1)
        await _until(lambda: direct.get_job_state(first.id) == "completed", 10, "first job")
        proxy.cut()
        await asyncio.sleep(2.0)
        proxy.restore()
        after = direct.add("echo", 2)
        await _until(lambda: direct.get_job_state(after.id) == "completed", 15, "job after")
        await _until(
            lambda: any("reconnected" in r.getMessage() for r in caplog.records), 10, "back"
        )
    finally:
        worker.close()
        await asyncio.wait_for(task, 15)
        queue.close()
        direct.close()
        proxy.close()
    loud = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    address = f"127.0.0.1:{proxy.port}"
    assert sum(f"Redis at {address} unreachable, retrying" in m for m in loud) == 1, loud
    assert sum(f"Redis at {address} reconnected" in m for m in loud) == 1, loud
    assert not [m for m in loud if " failed" in m], loud
    # -v 2 (DEBUG) too stays readable (the trial counted 34 lines in 10 s): the first failed
    # call of each part of the worker before the outage is declared, the outage's two lines,
    # and within the outage at most a line per 10 s, not one per failed call
    said = [r.getMessage() for r in caplog.records if address in r.getMessage()]
    assert sum("a call failed" in m for m in said) <= 6, said
    assert len(said) <= 8, said


async def test_a_rotated_password_is_logged_as_refused_credentials_not_unreachable(
    queue_name: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Redis's password changed under a running worker: it said only "unreachable, retrying",
    as for a cut network; it must say the credentials were refused, once, and "reconnected"
    once they work again."""
    server = RedisServer().start()
    admin = redis.Redis(port=server.port)
    admin.config_set("requirepass", "old")
    admin = redis.Redis(port=server.port, password="old")
    queue = Queue(queue_name, f"redis://:old@127.0.0.1:{server.port}/0")
    worker = make_worker(
        queue, lambda job: job.data, name="rotated", stalled_interval=200, lock_duration=400
    )
    caplog.set_level(logging.DEBUG, logger="django_bullq")
    task = asyncio.create_task(worker.arun())
    try:
        first = queue.add("echo", 1)
        await _until(lambda: queue.get_job_state(first.id) == "completed", 10, "first job")
        admin.config_set("requirepass", "new")
        admin = redis.Redis(port=server.port, password="new")
        admin.client_kill_filter(_type="normal", skipme=True)  # the worker must connect again
        await asyncio.sleep(2.0)
        admin.config_set("requirepass", "old")
        producer = Queue(queue_name, f"redis://:old@127.0.0.1:{server.port}/0")
        after = producer.add("echo", 2)
        await _until(lambda: producer.get_job_state(after.id) == "completed", 15, "job after")
        producer.close()
        await _until(
            lambda: any("reconnected" in r.getMessage() for r in caplog.records), 10, "back"
        )
    finally:
        worker.close()
        await asyncio.wait_for(task, 15)
        queue.close()
        server.cleanup()
    loud = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    address = f"127.0.0.1:{server.port}"
    refused = [m for m in loud if f"Redis at {address} refused the credentials" in m]
    assert len(refused) == 1, loud
    assert "fix the password or ACL user" in refused[0]
    # the connections Redis closed may be logged first, once; the refusals are not "unreachable"
    assert sum("unreachable" in m for m in loud) <= 1, loud
    assert sum(f"Redis at {address} reconnected" in m for m in loud) == 1, loud


async def test_a_finish_retried_through_an_outage_logs_the_outage_once(
    redis_url: str, queue_name: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A job that ends while Redis is cut: its moveToFinished is retried until Redis is back
    (within the lock), with no warning per retry."""
    port = int(redis_url.rsplit(":", 1)[1].split("/")[0])
    proxy = TcpProxy(port)
    queue = Queue(queue_name, f"redis://127.0.0.1:{proxy.port}/0")
    direct = Queue(queue_name, redis_url)

    def slow(job: Any) -> int:
        time.sleep(0.5)
        return 7

    worker = make_worker(queue, slow, name="finish", lock_duration=5000)
    caplog.set_level(logging.INFO, logger="django_bullq")
    task = asyncio.create_task(worker.arun())
    try:
        job = direct.add("slow", 1)
        await _until(lambda: direct.get_job_state(job.id) == "active", 10, "job active")
        proxy.cut()
        await asyncio.sleep(1.5)  # the job ends during the cut
        proxy.restore()
        await _until(lambda: direct.get_job_state(job.id) == "completed", 10, "job finished")
    finally:
        worker.close()
        await asyncio.wait_for(task, 15)
        queue.close()
        direct.close()
        proxy.close()
    loud = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert sum("unreachable, retrying" in m for m in loud) == 1, loud
    assert not [m for m in loud if "moveToFinished" in m], loud


async def test_stuck_fetch_loop_withholds_the_heartbeat(queue: Queue, r: redis.Redis) -> None:
    """A worker whose fetch loop hangs (alive process, no fetching) must not look alive."""
    worker = make_worker(queue, lambda job: None, name="stuck")
    hang = asyncio.Event()

    async def stuck_loop(*, burst: bool) -> None:
        await hang.wait()  # never passes a checkpoint again

    worker._main_loop = stuck_loop  # type: ignore[method-assign]
    task = asyncio.create_task(worker.arun())
    try:
        await asyncio.sleep(0.3)
        assert "stuck" in _beats(r, queue)  # the first beat, at start
        worker._loop_deadline = 0.0  # the loop's slack is used up (10 s in real time)
        r.delete(heartbeat.beat_key(queue.keys, "stuck"))
        await asyncio.sleep(heartbeat.INTERVAL_S + 0.5)
        assert not worker.is_fetch_loop_alive()
        assert not _beats(r, queue)["stuck"].alive
    finally:
        hang.set()
        worker.close()
        await asyncio.wait_for(task, 15)


async def test_clean_stop_removes_the_heartbeat(queue: Queue, r: redis.Redis) -> None:
    worker = make_worker(queue, lambda job: None, name="clean")
    task = asyncio.create_task(worker.arun())
    await _until(lambda: "clean" in _beats(r, queue), 8, "heartbeat")
    beat = _beats(r, queue)["clean"]
    assert beat.alive and beat.info["queue"] == queue.name and beat.info["concurrency"] == 1
    assert 0 < r.ttl(heartbeat.beat_key(queue.keys, "clean")) <= heartbeat.TTL_S
    worker.close()
    await asyncio.wait_for(task, 15)
    assert "clean" not in _beats(r, queue)
