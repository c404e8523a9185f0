"""AutoPipeline: the script calls of one loop pass share one write, and each gets its own reply.

Against the session's real redis-server. ``addLog`` is the probe: it answers the number of log
lines of the job it is given, so a reply handed to the wrong caller shows.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from redis.exceptions import ResponseError

from django_bullq.core.autopipeline import AutoPipeline
from django_bullq.core.errors import ScriptError
from django_bullq.core.queue import Queue


async def _jobs(queue: Queue, n: int) -> list[str]:
    ids = []
    for i in range(n):
        job = await queue.aadd("probe", {"i": i})
        ids.append(job.id)
    return ids


def log_call(pipe: AutoPipeline, queue: Queue, job_id: str, line: Any = "x") -> Any:
    """``addLog`` through ``pipe``: answers the job's number of log lines (-1 → ScriptError)."""
    key = queue.keys.job(job_id)
    return pipe.run("addLog", [key, f"{key}:logs"], [job_id, line, 0], job_id=job_id)


async def test_calls_of_one_pass_share_one_write(queue: Queue) -> None:
    ids = await _jobs(queue, 30)
    pipe = AutoPipeline(queue.aclient, queue.ascripts)
    try:
        # job i gets i lines first, so the reply of its next call must be i + 1
        for i, job_id in enumerate(ids):
            for _ in range(i):
                await log_call(pipe, queue, job_id)
        writes_before = pipe.writes
        replies = await asyncio.gather(*(log_call(pipe, queue, j) for j in ids))
        assert replies == [i + 1 for i in range(len(ids))]
        assert pipe.writes - writes_before == 1  # thirty calls, one write
    finally:
        await pipe.aclose()


async def test_error_reply_fails_only_its_own_call(queue: Queue) -> None:
    ids = await _jobs(queue, 3)
    await queue.aclient.set(f"{queue.keys.job(ids[1])}:logs", "not a list")
    pipe = AutoPipeline(queue.aclient, queue.ascripts)
    try:
        results = await asyncio.gather(
            log_call(pipe, queue, ids[0]),
            log_call(pipe, queue, ids[1]),  # RPUSH on a string: a Lua error in Redis
            log_call(pipe, queue, "no-such-job"),  # the script's -1 code
            log_call(pipe, queue, ids[2]),
            return_exceptions=True,
        )
        assert results[0] == 1 and results[3] == 1
        assert isinstance(results[1], ResponseError) and "WRONGTYPE" in str(results[1])
        assert isinstance(results[2], ScriptError)
        assert await log_call(pipe, queue, ids[0]) == 2  # the connection is still in step
    finally:
        await pipe.aclose()


async def test_noscript_after_script_flush_loads_and_runs(queue: Queue) -> None:
    ids = await _jobs(queue, 2)
    pipe = AutoPipeline(queue.aclient, queue.ascripts)
    try:
        assert await log_call(pipe, queue, ids[0]) == 1
        await queue.aclient.script_flush()
        replies = await asyncio.gather(*(log_call(pipe, queue, j) for j in ids))
        assert replies == [2, 1]
    finally:
        await pipe.aclose()


async def test_cancelled_caller_does_not_shift_replies(queue: Queue) -> None:
    ids = await _jobs(queue, 6)
    pipe = AutoPipeline(queue.aclient, queue.ascripts)
    try:
        for i, job_id in enumerate(ids):
            for _ in range(i):
                await log_call(pipe, queue, job_id)
        tasks = [asyncio.ensure_future(log_call(pipe, queue, j)) for j in ids]
        await asyncio.sleep(0)  # the calls are queued (or sent); now two callers give up
        tasks[1].cancel()
        tasks[4].cancel()
        results = await asyncio.gather(*tasks, return_exceptions=True)
        assert [results[i] for i in (0, 2, 3, 5)] == [1, 3, 4, 6]
        assert isinstance(results[1], asyncio.CancelledError)
        # the cancelled calls may still have run; the next reply must be this call's own
        assert await log_call(pipe, queue, ids[5]) == 7
    finally:
        await pipe.aclose()


async def test_killed_connection_fails_calls_in_flight_then_reconnects(
    queue: Queue, r: redis.Redis
) -> None:
    ids = await _jobs(queue, 2)
    pipe = AutoPipeline(queue.aclient, queue.ascripts)
    try:
        assert await log_call(pipe, queue, ids[0]) == 1
        assert pipe._link is not None
        await pipe._link.conn.send_command("CLIENT", "ID")
        client_id = int(await pipe._link.conn.read_response())
        assert r.client_kill_filter(_id=str(client_id)) == 1
        with pytest.raises(redis.ConnectionError):
            await log_call(pipe, queue, ids[0])
        # the next call goes out on a new connection and is answered in order
        replies = await asyncio.gather(*(log_call(pipe, queue, j) for j in ids))
        assert replies[1] == 1 and replies[0] in (2, 3)  # the failed call may have run
    finally:
        await pipe.aclose()


async def test_closed_pipeline_runs_calls_one_by_one(queue: Queue) -> None:
    ids = await _jobs(queue, 1)
    pipe = AutoPipeline(queue.aclient, queue.ascripts)
    await pipe.aclose()
    assert await log_call(pipe, queue, ids[0]) == 1
    assert pipe.writes == 0


@pytest.fixture
def silent() -> Iterator[tuple[socket.socket, int]]:
    """A listening socket that accepts connections and never answers (a hung server)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    yield listener, listener.getsockname()[1]
    listener.close()


async def test_reset_fails_calls_waiting_on_a_silent_server(
    silent: tuple[socket.socket, int],
) -> None:
    """A server that accepts and never answers (a hung network): reset() frees the callers."""
    queue = Queue("silent", f"redis://127.0.0.1:{silent[1]}/0")
    pipe = queue.apipeline
    call = asyncio.ensure_future(log_call(pipe, queue, "1"))
    done, _ = await asyncio.wait({call}, timeout=0.3)
    assert not done  # no reply, and none coming
    await pipe.reset("gave up")
    with pytest.raises(redis.ConnectionError, match="gave up"):
        await asyncio.wait_for(call, 2)


async def test_calls_after_a_reset_mid_connect_go_out_on_a_new_connection(
    silent: tuple[socket.socket, int],
) -> None:
    """reset() while the writer is stuck connecting: later calls still get a writer."""
    listener, port = silent
    queue = Queue("silent", f"redis://127.0.0.1:{port}/0")
    pipe = queue.apipeline
    first = asyncio.ensure_future(log_call(pipe, queue, "1"))
    await asyncio.sleep(0.2)  # the writer is waiting for the server's handshake reply
    second = asyncio.ensure_future(log_call(pipe, queue, "2"))
    await asyncio.sleep(0)
    await pipe.reset("gave up")
    with pytest.raises(redis.ConnectionError):
        await asyncio.wait_for(first, 2)
    assert pipe._writer is not None  # a new writer took over the queued call
    listener.close()  # the new connection is refused: the queued call fails, not hangs
    with pytest.raises(redis.ConnectionError):
        await asyncio.wait_for(second, 10)


async def test_a_call_that_meets_noscript_again_after_the_reload_runs_by_source() -> None:
    """A script cache flushed again between the reload and the resend (a SCRIPT FLUSH storm
    under load) must not reach the caller as NoScriptError. A server that refuses SCRIPT
    LOAD makes every reload fail, so each call takes that last path: EVAL of the source."""
    from tests.support.redis_nodes import RedisNode

    node = RedisNode(["--rename-command", "SCRIPT", ""]).start()
    try:
        queue = Queue("no-script-load", f"redis://127.0.0.1:{node.port}/0")
        key = queue.keys.job("j1")
        await queue.aclient.hset(key, "name", "x")
        pipe = AutoPipeline(queue.aclient, queue.ascripts)
        try:
            replies = await asyncio.gather(*(log_call(pipe, queue, "j1") for _ in range(3)))
            # each call ran once, by source; resent one by one, their order may change
            assert sorted(replies) == [1, 2, 3]
        finally:
            await pipe.aclose()
            queue.close()
    finally:
        node.cleanup()


# --- the socket timeout: one watchdog a connection, not a timer a reply -------------------------


def _silent_queue(port: int, socket_timeout: float) -> Queue:
    from django_bullq.core.connection import Connection

    return Queue(
        "silent",
        Connection(
            f"redis://127.0.0.1:{port}/0",
            options={"socket_timeout": socket_timeout, "retry_on_timeout": False},
        ),
    )


async def test_a_silent_server_times_pipelined_calls_out_within_the_socket_timeout(
    silent: tuple[socket.socket, int],
) -> None:
    """A server that accepts and never answers: calls in flight fail with the client's
    TimeoutError once ``socket_timeout`` passes (redis-py's handshake read times out while it
    connects), and calls made after them go out on a new connection, and time out too."""
    queue = _silent_queue(silent[1], 0.3)
    pipe = queue.apipeline
    try:
        loop = asyncio.get_running_loop()
        start = loop.time()
        calls = [asyncio.ensure_future(log_call(pipe, queue, str(i))) for i in range(3)]
        results = await asyncio.wait_for(asyncio.gather(*calls, return_exceptions=True), 5)
        assert all(isinstance(r, redis.TimeoutError) for r in results), results
        assert 0.3 <= loop.time() - start < 2
        with pytest.raises(redis.TimeoutError):
            await asyncio.wait_for(log_call(pipe, queue, "again"), 5)
    finally:
        await pipe.aclose()
        queue.close()


async def test_replies_that_keep_coming_outlast_the_socket_timeout(
    redis_url: str, queue_name: str
) -> None:
    """The timeout bounds the wait for the next reply, not a connection's busy spell: calls
    answered one after another for longer than ``socket_timeout`` all succeed."""
    from django_bullq.core.connection import Connection

    busy = Queue(queue_name, Connection(redis_url, options={"socket_timeout": 0.2}))
    ids = await _jobs(busy, 1)
    pipe = busy.apipeline
    try:
        loop = asyncio.get_running_loop()
        start, replies = loop.time(), 0
        while loop.time() - start < 0.8:
            replies = await asyncio.gather(*(log_call(pipe, busy, ids[0]) for _ in range(50)))
        assert replies[-1] > 50
        assert pipe._link is not None and not pipe._link.dead
    finally:
        await pipe.aclose()
        busy.close()


async def test_pipelined_replies_set_no_timer_each(
    queue: Queue, monkeypatch: pytest.MonkeyPatch
) -> None:
    """redis-py arms a timer around each read and each write of a connection that has a
    socket timeout; the pipeline's connection has one watchdog instead, re-armed only when it
    fires: 2,000 calls in 40 writes schedule a handful of timers, not thousands."""
    ids = await _jobs(queue, 1)
    pipe = AutoPipeline(queue.aclient, queue.ascripts)
    loop = asyncio.get_running_loop()
    timers = 0
    call_at = loop.call_at

    def counted(*args: Any, **kwargs: Any) -> Any:
        nonlocal timers
        timers += 1
        return call_at(*args, **kwargs)

    try:
        await log_call(pipe, queue, ids[0])  # connected
        assert pipe._link is not None and pipe._link.timeout_s  # the client has a timeout
        monkeypatch.setattr(loop, "call_at", counted)
        for _ in range(40):
            await asyncio.gather(*(log_call(pipe, queue, ids[0]) for _ in range(50)))
        assert timers <= 5, timers
    finally:
        monkeypatch.undo()
        await pipe.aclose()


async def test_a_server_that_stops_answering_times_calls_out_within_the_socket_timeout(
    redis_url: str, queue_name: str, r: redis.Redis
) -> None:
    """On a connection that is up, the watchdog applies ``socket_timeout``: calls sent while
    the server answers nobody (``CLIENT PAUSE``) fail with the client's TimeoutError after it,
    and the next call, once the server answers again, goes out on a new connection."""
    from django_bullq.core.connection import Connection

    paused = Queue(queue_name, Connection(redis_url, options={"socket_timeout": 0.3}))
    ids = await _jobs(paused, 1)
    pipe = AutoPipeline(paused.aclient, paused.ascripts)
    try:
        assert await log_call(pipe, paused, ids[0]) == 1  # connected
        loop = asyncio.get_running_loop()
        r.execute_command("CLIENT", "PAUSE", 1500, "ALL")
        start = loop.time()
        try:
            with pytest.raises(redis.TimeoutError, match="no reply within 0.3 s"):
                await asyncio.wait_for(log_call(pipe, paused, ids[0]), 5)
            assert 0.3 <= loop.time() - start < 1.2
        finally:
            r.execute_command("CLIENT", "UNPAUSE")
        assert await asyncio.wait_for(log_call(pipe, paused, ids[0]), 5) >= 2
    finally:
        await pipe.aclose()
        paused.close()


def test_a_socket_timeout_that_is_not_a_number_is_left_to_redis_py() -> None:
    """``socket_timeout="5"`` (read from the environment; check E003 reports it) arms no
    watchdog and stays on the connection, where redis-py refuses it at the first write (each
    call then fails with a connection error naming the TypeError; none waits forever)."""
    import redis.asyncio

    from django_bullq.core.pipeline_link import Link

    odd = redis.asyncio.Redis.from_url("redis://127.0.0.1:1/0", socket_timeout="5")
    link = Link(odd.connection_pool.make_connection())
    assert link.timeout_s is None and link.conn.socket_timeout == "5"
    fine = redis.asyncio.Redis.from_url("redis://127.0.0.1:1/0", socket_timeout=2)
    link = Link(fine.connection_pool.make_connection())
    assert link.timeout_s == 2.0 and link.conn.socket_timeout == 2  # redis-py's while it connects
    link.connected(0.0)
    assert link.conn.socket_timeout is None  # the watchdog's once it is up
