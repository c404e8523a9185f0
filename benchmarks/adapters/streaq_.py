"""streaq on Redis (its client is coredis, counted by :func:`common.count_round_trips`).

Set-up: ``pip install streaq`` in ``.venv-bench`` beside the other peers; an async task on
uvloop (:func:`common.run_async`; streaq runs on anyio's asyncio backend, which uses the running
loop), a ``Worker`` with ``concurrency`` and its other settings streaq's defaults (prefetch
``concurrency``, pickle serializer). Bulk: ``Worker.enqueue_many`` (one pipeline per chunk);
single: ``await task.enqueue(i)``. The producer and the worker are two Worker objects of the
same queue, as a web process and a worker process would be. A result is kept for the task's
``ttl`` (streaq's default 5 minutes); ``remove_completed`` registers the task with ``ttl=0``,
which stores none.
"""

from __future__ import annotations

import time
from typing import Any

from streaq import Worker

from benchmarks.adapters import common


def make_worker(spec: dict[str, Any], tally: common.Tally | None = None) -> tuple[Worker, Any]:
    """A Worker of the spec's queue and its ``bench`` task (counted by ``tally`` if given)."""
    worker: Worker = Worker(
        redis_url=spec["url"], queue_name=spec["queue"], concurrency=int(spec["concurrency"])
    )
    body = common.async_work(spec)
    options: dict[str, Any] = {"ttl": 0} if spec.get("remove_completed") else {}

    async def bench(i: int) -> None:
        if tally is not None:
            tally.started()
        await body()
        if tally is not None:
            tally.done()

    return worker, worker.task(**options)(bench)


async def bulk(producer: Worker, task: Any, spec: dict[str, Any]) -> float:
    start = time.perf_counter()
    for part in common.chunks(int(spec["jobs"]), int(spec["chunk"])):
        await producer.enqueue_many([task.enqueue(i) for i in part])
    return time.perf_counter() - start


async def work(producer: Worker, task: Any, spec: dict[str, Any]) -> None:
    await bulk(producer, task, spec)
    worker, _ = make_worker(spec, common.Tally(spec))
    common.ready_and_wait()
    await worker.run_async()


async def main(spec: dict[str, Any]) -> None:
    producer, task = make_worker(spec)
    async with producer:
        await common.dispatch_async(
            spec,
            lambda: bulk(producer, task, spec),
            lambda i: task.enqueue(i),
            lambda: work(producer, task, spec),
        )


if __name__ == "__main__":
    common.count_round_trips()
    common.run_async(main(common.spec_from_argv()))
