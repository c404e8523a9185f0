"""arq: ``ArqRedis.enqueue_job`` and an asyncio ``Worker`` with ``max_jobs`` = ``concurrency``.

Set-up: ``pip install arq`` (it pulls ``redis[hiredis]`` < 6) in its own venv,
``.venv-bench-arq``; async job functions on uvloop (:func:`common.run_async`). arq's worker polls
its queue every ``poll_delay`` (default 0.5 s) for up to ``queue_read_limit`` jobs (default
max(5 x max_jobs, 100)), which caps the defaults near 200 jobs/s however fast the jobs are;
this bench sets ``poll_delay=0.01`` (its documented knob), other settings arq's defaults. arq
has no bulk enqueue. A result is kept for ``keep_result`` (arq's default 3,600 s);
``remove_completed`` sets ``keep_result=0``, which stores none.
"""

from __future__ import annotations

import asyncio
from typing import Any

from arq import create_pool
from arq.connections import RedisSettings
from arq.worker import Worker, func

from benchmarks.adapters import common

FILL_BATCH = 200
POLL_DELAY_S = 0.01
#: arq's default keep_result (s), spelled out so that remove_completed can set 0
KEEP_RESULT_S = 3600


async def main(spec: dict[str, Any]) -> None:
    settings = RedisSettings.from_dsn(spec["url"])
    pool = await create_pool(settings, default_queue_name=spec["queue"])

    async def work() -> None:
        tally = common.Tally(spec)
        body = common.async_work(spec)

        async def bench(ctx: Any, i: int) -> None:
            tally.started()
            await body()
            tally.done()

        total = int(spec["jobs"])
        for part in common.chunks(total, FILL_BATCH):  # the fill is not timed
            await asyncio.gather(*(pool.enqueue_job("bench", i) for i in part))
        worker = Worker(
            functions=[func(bench, name="bench")],
            queue_name=spec["queue"],
            redis_settings=settings,
            max_jobs=int(spec["concurrency"]),
            poll_delay=POLL_DELAY_S,
            keep_result=0 if spec.get("remove_completed") else KEEP_RESULT_S,
        )
        common.ready_and_wait()
        await worker.async_run()

    await common.dispatch_async(
        spec,
        "no bulk enqueue: enqueue_job() adds one job per call",
        lambda i: pool.enqueue_job("bench", i),
        work,
    )


if __name__ == "__main__":
    common.count_round_trips()
    common.run_async(main(common.spec_from_argv()))
