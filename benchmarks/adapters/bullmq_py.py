"""PyPI ``bullmq`` (the official Python port): Queue.addBulk / add and an asyncio Worker with
``concurrency``, on uvloop like every asyncio adapter (:func:`common.run_async`); completed jobs
kept (BullMQ's default) unless the spec says ``remove_completed`` (Worker ``removeOnComplete``)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from bullmq import Queue, Worker

from benchmarks.adapters import common


async def bulk(queue: Queue, spec: dict[str, Any]) -> float:
    start = time.perf_counter()
    for part in common.chunks(int(spec["jobs"]), int(spec["chunk"])):
        await queue.addBulk([{"name": "bench", "data": {"i": i}} for i in part])
    return time.perf_counter() - start


async def work(queue: Queue, spec: dict[str, Any]) -> None:
    tally = common.Tally(spec, sample_rss=spec["kind"] == "memory")
    body = common.async_work(spec)

    async def processor(job: Any, token: str) -> None:
        tally.started()
        await body()
        tally.done()

    await bulk(queue, spec)
    common.ready_and_wait()
    tally.arm()
    opts: dict[str, Any] = {"connection": spec["url"], "concurrency": int(spec["concurrency"])}
    if spec.get("remove_completed"):
        opts["removeOnComplete"] = True
    Worker(spec["queue"], processor, opts)
    await asyncio.Event().wait()


async def main(spec: dict[str, Any]) -> None:
    queue = Queue(spec["queue"], {"connection": spec["url"]})
    await common.dispatch_async(
        spec,
        lambda: bulk(queue, spec),
        lambda i: queue.add("bench", {"i": i}),
        lambda: work(queue, spec),
    )


if __name__ == "__main__":
    common.count_round_trips()
    common.run_async(main(common.spec_from_argv()))
