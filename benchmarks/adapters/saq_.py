"""SAQ (Simple Async Queue) on Redis: ``Queue.enqueue`` and a ``Worker`` with ``concurrency``.

Set-up: ``pip install 'saq[redis,hiredis]'`` (its README's hiredis extra, the fastest parser) in
its own venv, ``.venv-bench-saq`` (SAQ's redis extra wants redis-py < 8, taskiq-redis needs 8);
async job functions on uvloop (:func:`common.run_async`); the Worker's other settings SAQ's
defaults (listen/notify dequeue, no polling). SAQ has no bulk enqueue (``Queue.map`` enqueues
one job per call and waits for the results). A finished job is kept for its ``ttl`` (SAQ's
default 600 s); ``remove_completed`` enqueues with ``ttl=-1``, which deletes it on completion.
"""

from __future__ import annotations

import asyncio
from typing import Any

from saq import Queue, Worker

from benchmarks.adapters import common

FILL_BATCH = 200


async def work(queue: Queue, spec: dict[str, Any], keep: dict[str, Any]) -> None:
    tally = common.Tally(spec)
    body = common.async_work(spec)

    async def bench(ctx: Any, *, i: int) -> None:
        tally.started()
        await body()
        tally.done()

    total = int(spec["jobs"])
    for part in common.chunks(total, FILL_BATCH):  # the fill is not timed
        await asyncio.gather(*(queue.enqueue("bench", i=i, **keep) for i in part))
    worker = Worker(queue, functions=[("bench", bench)], concurrency=int(spec["concurrency"]))
    common.ready_and_wait()
    await worker.start()


async def main(spec: dict[str, Any]) -> None:
    queue = Queue.from_url(spec["url"], name=spec["queue"])
    await queue.connect()
    keep: dict[str, Any] = {"ttl": -1} if spec.get("remove_completed") else {}
    await common.dispatch_async(
        spec,
        "no bulk enqueue: Queue.map enqueues one job per call and waits for the results",
        lambda i: queue.enqueue("bench", i=i, **keep),
        lambda: work(queue, spec, keep),
    )


if __name__ == "__main__":
    common.count_round_trips()
    common.run_async(main(common.spec_from_argv()))
