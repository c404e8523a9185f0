"""taskiq with taskiq-redis: ``RedisStreamBroker`` (taskiq-redis's recommended broker, with
acknowledgements) and ``RedisAsyncResultBackend``, as its README sets them up.

Set-up: ``pip install taskiq taskiq-redis`` in ``.venv-bench`` (taskiq-redis is on redis-py 8);
an async task on uvloop (:func:`common.run_async`), the worker run in-process with
``taskiq.api.run_receiver_task`` and ``max_async_tasks`` = ``concurrency`` (the CLI's
``--max-async-tasks``; other settings the CLI's defaults). taskiq has no bulk kick
(``kiq`` sends one message). Results are kept by the result backend (no expiry, its default);
``remove_completed`` runs without a result backend (taskiq's default), so nothing is stored.
"""

from __future__ import annotations

import asyncio
from typing import Any

from taskiq.api import run_receiver_task
from taskiq_redis import RedisAsyncResultBackend, RedisStreamBroker

from benchmarks.adapters import common

FILL_BATCH = 200


def make_broker(spec: dict[str, Any]) -> Any:
    broker = RedisStreamBroker(url=spec["url"], queue_name=spec["queue"])
    if not spec.get("remove_completed"):
        broker = broker.with_result_backend(RedisAsyncResultBackend(redis_url=spec["url"]))
    return broker


async def main(spec: dict[str, Any]) -> None:
    broker = make_broker(spec)
    tally = common.Tally(spec)
    body = common.async_work(spec)

    async def bench(i: int) -> None:
        tally.started()
        await body()
        tally.done()

    task = broker.task(task_name="bench")(bench)
    await broker.startup()  # declares the stream's consumer group before anything is sent

    async def work() -> None:
        total = int(spec["jobs"])
        for part in common.chunks(total, FILL_BATCH):  # the fill is not timed
            await asyncio.gather(*(task.kiq(i) for i in part))
        common.ready_and_wait()
        await run_receiver_task(broker, max_async_tasks=int(spec["concurrency"]))

    await common.dispatch_async(
        spec,
        "no bulk enqueue: kiq() sends one message per call",
        lambda i: task.kiq(i),
        work,
    )


if __name__ == "__main__":
    common.count_round_trips()
    common.run_async(main(common.spec_from_argv()))
