"""ThreadPipeline under a Redis restart: threads adding jobs while redis-server goes down and
comes back lose nothing, and a caller whose add could not be made gets a clear error.

Its own persistent redis-server (AOF, fsync always), so the restart keeps what was written.
"""

from __future__ import annotations

import threading
import time

import redis

from django_bullq.core.errors import RedisUnavailableError
from django_bullq.core.queue import Queue
from django_bullq.core.threadpipeline import IDLE_CHECK_S
from tests.support.redis_server import RedisServer

THREADS = 8
PER_THREAD = 400


def test_adds_from_threads_across_a_redis_restart_lose_nothing(queue_name: str) -> None:
    server = RedisServer(persistent=True).start()
    queue = Queue(queue_name, server.url)
    added: list[tuple[str, int]] = []
    failed: list[BaseException] = []
    lock = threading.Lock()
    started = threading.Barrier(THREADS + 1)

    def adder(t: int) -> None:
        started.wait()
        for i in range(PER_THREAD):
            n = t * PER_THREAD + i
            try:
                job = queue.add("t", {"n": n})
            except RedisUnavailableError as exc:
                with lock:
                    failed.append(exc)
            except Exception as exc:  # noqa: BLE001 - anything else fails the test below
                with lock:
                    failed.append(exc)
            else:
                with lock:
                    added.append((job.id, n))

    threads = [threading.Thread(target=adder, args=(t,)) for t in range(THREADS)]
    try:
        for thread in threads:
            thread.start()
        started.wait()
        while len(added) < THREADS * PER_THREAD // 4:
            time.sleep(0.005)
        server.restart()
        for thread in threads:
            thread.join(60)
        assert not any(thread.is_alive() for thread in threads)
        # only clear errors, naming where Redis was
        assert all(isinstance(exc, RedisUnavailableError) for exc in failed), failed[:3]
        assert all(f"127.0.0.1:{server.port}" in str(exc) for exc in failed)
        assert len(added) + len(failed) == THREADS * PER_THREAD
        assert len({job_id for job_id, _ in added}) == len(added)
        r = redis.Redis.from_url(server.url, decode_responses=True)
        pipe = r.pipeline(transaction=False)
        for job_id, _ in added:
            pipe.hget(queue.keys.job(job_id), "data")
        stored = pipe.execute()
        r.close()
        # every add that returned a job is in Redis after the restart, with its own data
        assert stored == [f'{{"n":{n}}}' for _, n in added]
        assert queue.pipeline.writes < queue.pipeline.calls
    finally:
        queue.close()
        server.cleanup()


def test_the_first_add_after_a_redis_restart_succeeds(queue_name: str) -> None:
    # a web process idle across a restart: its pipeline connection was closed by the old
    # server; the next add must notice before writing, not fail the request (trial finding)
    server = RedisServer(persistent=True).start()
    queue = Queue(queue_name, server.url)
    try:
        before = queue.add("t", {"n": 1})
        server.restart()
        time.sleep(IDLE_CHECK_S * 2)  # idle, as a web process between requests
        after = queue.add("t", {"n": 2})
        assert after.id != before.id
        assert queue.get_job_counts("waiting")["waiting"] == 2
    finally:
        queue.close()
        server.cleanup()
