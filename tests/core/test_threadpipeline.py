"""ThreadPipeline: the adds threads make while a write is in flight share the next write, and
each thread gets its own reply or error.

Against the session's real redis-server. Contention is made certain rather than hoped for: the
first write is held until the other threads' calls are queued behind it, so the second write
carries all of them. Round trips are counted where redis-py writes to the socket
(``Connection.send_packed_command``: one per pipeline or single command).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import redis
import redis.connection
from redis.exceptions import ResponseError

from django_bullq.core.errors import ParentMissing, RedisUnavailableError
from django_bullq.core.job import Job
from django_bullq.core.queue import Queue
from django_bullq.core.threadpipeline import ThreadPipeline

THREADS = 10


def hold_first_write(pipe: ThreadPipeline, queued: int) -> None:
    """Make ``pipe``'s first write wait until ``queued`` calls are queued behind it."""
    original = pipe._send
    held = [False]

    def send(commands: list[tuple[Any, ...]]) -> list[Any]:
        if not held[0]:
            held[0] = True
            deadline = time.monotonic() + 10
            while len(pipe._pending) < queued and time.monotonic() < deadline:
                time.sleep(0.001)
        return original(commands)

    pipe._send = send  # type: ignore[method-assign]


def in_threads(calls: list[Callable[[], Any]]) -> list[Any]:
    """Run each call in its own thread, started together; their results or exceptions."""
    results: list[Any] = [None] * len(calls)
    start = threading.Barrier(len(calls))

    def run(i: int) -> None:
        start.wait()
        try:
            results[i] = calls[i]()
        except Exception as exc:  # noqa: BLE001 - the test reads it
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    return results


def add(queue: Queue, i: int, **options: Any) -> Callable[[], Job]:
    return lambda: queue.add("t", {"i": i}, **options)


def test_threads_adding_at_once_share_a_write_and_get_their_own_jobs(
    queue: Queue, r: redis.Redis, round_trips: list[int]
) -> None:
    queue.add("warm", None)  # scripts loaded, connection made
    hold_first_write(queue.pipeline, THREADS - 1)
    writes, trips = queue.pipeline.writes, round_trips[0]
    jobs = in_threads([add(queue, i) for i in range(THREADS)])
    assert queue.pipeline.writes - writes == 2  # the held write, then the nine behind it
    assert round_trips[0] - trips == 2 < THREADS
    assert all(isinstance(job, Job) for job in jobs), jobs
    assert len({job.id for job in jobs}) == THREADS
    for i, job in enumerate(jobs):
        assert job.data == {"i": i}
        assert r.hget(queue.keys.job(job.id), "data") == f'{{"i":{i}}}'


def test_a_lone_thread_pays_one_round_trip_per_add(queue: Queue, round_trips: list[int]) -> None:
    queue.add("warm", None)
    trips = round_trips[0]
    for i in range(20):
        queue.add("t", {"i": i})
    assert round_trips[0] - trips == 20
    assert queue.get_job_counts("waiting")["waiting"] == 21


def test_a_write_of_many_calls_is_one_socket_send(queue: Queue, monkeypatch: Any) -> None:
    # redis-py's sync send_packed_command calls sendall once per item of the list it gets:
    # a bulk add of 1,000 jobs handed it 1,000 packed commands, so 1,000 system calls
    queue.add("warm", None)
    sends: list[int] = []
    real = redis.connection.Connection.send_packed_command

    def send_packed_command(self: Any, command: Any, *args: Any, **kwargs: Any) -> None:
        sends.append(len(command) if isinstance(command, list) else 1)
        real(self, command, *args, **kwargs)

    monkeypatch.setattr(redis.connection.Connection, "send_packed_command", send_packed_command)
    jobs = queue.add_bulk([("t", {"i": i}) for i in range(1000)], chunk_size=500)
    assert sends == [1, 1]  # one buffer per write
    assert [job.data for job in jobs] == [{"i": i} for i in range(1000)]
    assert queue.get_job_counts("waiting")["waiting"] == 1001


def test_many_threads_many_adds_each_get_their_own_ids(queue: Queue, r: redis.Redis) -> None:
    per_thread = 200

    def adder(t: int) -> Callable[[], list[tuple[str, int]]]:
        def run() -> list[tuple[str, int]]:
            return [
                (queue.add("t", {"n": t * per_thread + i}).id, t * per_thread + i)
                for i in range(per_thread)
            ]

        return run

    # An add that meets NOSCRIPT (the script not loaded yet on this server, or flushed by an
    # earlier test) is sent again and counted twice: load it first.
    queue.add("warm", None)
    writes, calls = queue.pipeline.writes, queue.pipeline.calls
    results = in_threads([adder(t) for t in range(THREADS)])
    pairs = [pair for result in results for pair in result]
    assert len({job_id for job_id, _ in pairs}) == THREADS * per_thread
    stored = {job_id: r.hget(queue.keys.job(job_id), "data") for job_id, _ in pairs}
    assert all(stored[job_id] == f'{{"n":{n}}}' for job_id, n in pairs)
    assert queue.pipeline.calls - calls == THREADS * per_thread
    assert queue.pipeline.writes - writes <= THREADS * per_thread


def test_a_missing_parent_fails_only_its_own_add(queue: Queue) -> None:
    queue.add("warm", None)
    ghost = {"id": "no-such-parent", "queue": queue.keys.queue_key}
    hold_first_write(queue.pipeline, THREADS - 1)
    calls = [add(queue, i) for i in range(THREADS)]
    calls[4] = add(queue, 4, parent=ghost)
    results = in_threads(calls)
    assert isinstance(results[4], ParentMissing)
    others = [result for i, result in enumerate(results) if i != 4]
    assert all(isinstance(job, Job) for job in others), others
    assert queue.get_job_counts("waiting")["waiting"] == THREADS  # warm + nine


def test_a_duplicate_custom_id_gets_the_existing_job(queue: Queue) -> None:
    first = queue.add("t", {"i": 0}, job_id="same")
    hold_first_write(queue.pipeline, THREADS - 1)
    results = in_threads(
        [add(queue, i, job_id="same" if i % 2 else f"own-{i}") for i in range(THREADS)]
    )
    assert [job.id for job in results] == ["same" if i % 2 else f"own-{i}" for i in range(THREADS)]
    assert queue.get_job(first.id).data == {"i": 0}  # type: ignore[union-attr]


def test_a_lua_error_reply_fails_only_its_own_call(queue: Queue, r: redis.Redis) -> None:
    jobs = [queue.add("t", i) for i in range(THREADS)]
    r.set(f"{queue.keys.job(jobs[3].id)}:logs", "not a list")  # RPUSH on a string: a Lua error
    pipe = queue.pipeline
    hold_first_write(pipe, THREADS - 1)

    def log(job: Job) -> Callable[[], Any]:
        key = queue.keys.job(job.id)
        return lambda: pipe.run("addLog", [key, f"{key}:logs"], [job.id, "x", 0], job_id=job.id)

    results = in_threads([log(job) for job in jobs])
    assert isinstance(results[3], ResponseError)
    assert [result for i, result in enumerate(results) if i != 3] == [1] * (THREADS - 1)


def test_calls_after_a_script_flush_load_it_once_and_all_run(queue: Queue, r: redis.Redis) -> None:
    queue.add("warm", None)
    r.script_flush()
    hold_first_write(queue.pipeline, THREADS - 1)
    jobs = in_threads([add(queue, i) for i in range(THREADS)])
    assert all(isinstance(job, Job) for job in jobs), jobs
    assert len({job.id for job in jobs}) == THREADS
    r.script_flush()
    assert isinstance(queue.add("alone", None), Job)


def test_an_unreachable_redis_fails_every_caller_clearly(queue_name: str) -> None:
    from django_bullq.core.connection import Connection

    queue = Queue(
        queue_name,
        Connection("redis://127.0.0.1:1/0", options={"retry": None, "socket_connect_timeout": 1}),
    )
    results = in_threads([add(queue, i) for i in range(THREADS)])
    assert all(isinstance(result, RedisUnavailableError) for result in results), results
    assert all("127.0.0.1:1" in str(result) for result in results)
    queue.close()


def test_close_drops_the_pipelines_connection_and_a_later_add_reconnects(
    queue: Queue, r: redis.Redis
) -> None:
    queue.add("t", 1)
    name = f"bullq-tp-{queue.name}"
    queue.pipeline._conn.send_command("CLIENT", "SETNAME", name)
    assert queue.pipeline._conn.read_response() in (b"OK", "OK")
    assert any(c["name"] == name for c in r.client_list())
    queue.close()
    deadline = time.monotonic() + 10  # the server notices the closed socket on its next pass
    while any(c["name"] == name for c in r.client_list()) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not any(c["name"] == name for c in r.client_list())
    assert isinstance(queue.add("t", 2), Job)
    assert queue.count() == 2
