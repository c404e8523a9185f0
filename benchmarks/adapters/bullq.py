"""django_bullq: the core Queue and Worker (asyncio; async processors run on the loop, and
``def`` ones, in :mod:`benchmarks.adapters.bullq_sync`, in the worker's threads)."""

from __future__ import annotations

import os
import time
from typing import Any

from benchmarks.adapters import common
from django_bullq import Queue, Worker
from django_bullq.core import eventloop
from django_bullq.core.job import Job
from django_bullq.core.worker import WorkerOptions


async def bulk(queue: Queue, spec: dict[str, Any]) -> float:
    start = time.perf_counter()
    for part in common.chunks(int(spec["jobs"]), int(spec["chunk"])):
        await queue.aadd_bulk([("bench", {"i": i}) for i in part])
    return time.perf_counter() - start


async def work(queue: Queue, spec: dict[str, Any], *, sync: bool = False) -> None:
    """Process the spec's jobs; ``sync``: with a ``def`` processor (the worker's threads)."""
    tally = common.Tally(spec, sample_rss=spec["kind"] == "memory")
    processor = _sync_processor(tally, spec) if sync else _async_processor(tally, spec)

    # remove_completed (the *_removed rows): each job's hash goes when it completes;
    # otherwise BullMQ's default (kept), or the growth runs' bound (keep_completed).
    remove = True if spec.get("remove_completed") else spec.get("keep_completed")
    options = WorkerOptions(concurrency=int(spec["concurrency"]), remove_on_complete=remove)
    worker = Worker(queue, processor, options)
    if spec["kind"] == "process":
        await bulk(queue, spec)
    common.ready_and_wait()
    tally.arm()
    await worker.arun()


def _async_processor(tally: common.Tally, spec: dict[str, Any]) -> Any:
    body = common.async_work(spec)

    async def processor(job: Job) -> None:
        tally.started()
        await body()
        tally.done()

    return processor


def _sync_processor(tally: common.Tally, spec: dict[str, Any]) -> Any:
    body = common.sync_work(spec)

    def processor(job: Job) -> None:
        tally.started()
        body()
        tally.done()

    return processor


async def main(spec: dict[str, Any], *, sync: bool = False) -> None:
    queue = Queue(spec["queue"], spec["url"])
    await common.dispatch_async(
        spec,
        lambda: bulk(queue, spec),
        lambda i: queue.aadd("bench", {"i": i}),
        lambda: work(queue, spec, sync=sync),
    )


if __name__ == "__main__":
    common.count_round_trips()
    # the loop `runworker` uses by default: uvloop when installed (BENCH_EVENT_LOOP to compare)
    eventloop.run(main(common.spec_from_argv()), os.environ.get("BENCH_EVENT_LOOP", "auto"))
