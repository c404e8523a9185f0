"""RQ: ``Queue.enqueue_many`` / ``enqueue`` and a ``SimpleWorker`` (no fork per job; RQ runs one
job at a time per worker process, so concurrency above 1 is not applicable). Results kept for
RQ's default ``result_ttl`` (500 s); ``remove_completed`` enqueues with ``result_ttl=0``."""

from __future__ import annotations

import time
from typing import Any

from redis import Redis
from rq import Queue, SimpleWorker

from benchmarks.adapters import common, jobs


def retention(spec: dict[str, Any]) -> dict[str, Any]:
    """RQ's per-job option that drops the job and its result when it completes."""
    return {"result_ttl": 0} if spec.get("remove_completed") else {}


def bulk(queue: Queue, spec: dict[str, Any]) -> float:
    start = time.perf_counter()
    keep = retention(spec)
    for part in common.chunks(int(spec["jobs"]), int(spec["chunk"])):
        queue.enqueue_many([Queue.prepare_data(jobs.run_job, args=(i,), **keep) for i in part])
    return time.perf_counter() - start


def work(connection: Redis, queue: Queue, spec: dict[str, Any]) -> None:
    if int(spec["concurrency"]) > 1:
        common.not_applicable(
            "RQ runs one job at a time per worker process (concurrency means that many processes)"
        )
    jobs.TALLY = common.Tally(spec)
    jobs.BODY = common.sync_work(spec)
    bulk(queue, spec)
    worker = SimpleWorker([queue], connection=connection)
    common.ready_and_wait()
    jobs.TALLY.arm()
    worker.work(burst=False, logging_level="WARNING")


def main(spec: dict[str, Any]) -> None:
    connection = Redis.from_url(spec["url"])
    queue = Queue(spec["queue"], connection=connection)
    common.dispatch_threads(
        spec,
        lambda: bulk(queue, spec),
        lambda i: queue.enqueue(jobs.run_job, i),
        lambda: work(connection, queue, spec),
    )


if __name__ == "__main__":
    common.count_round_trips()
    main(common.spec_from_argv())
