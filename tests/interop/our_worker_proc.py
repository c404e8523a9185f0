"""A django_bullq Worker in a process of its own, for tests that kill it mid-job.

Usage: ``python -m tests.interop.our_worker_proc <redisUrl> <queueName> <lockMs>`` from the
repository root. The processor prints ``{"ready": true, "job": <id>}`` when it starts a job and
then never finishes it, so the job keeps its lock only as long as this process renews it.
"""

from __future__ import annotations

import asyncio
import json
import sys

from django_bullq import Job, Queue, Worker
from django_bullq.core.worker import WorkerOptions


async def main(url: str, queue_name: str, lock_ms: int) -> None:
    queue = Queue(queue_name, url)

    async def hang(job: Job) -> None:
        print(json.dumps({"ready": True, "job": job.id}), flush=True)
        await asyncio.Event().wait()

    worker = Worker(
        queue,
        hang,
        WorkerOptions(
            lock_duration=lock_ms, stalled_interval=lock_ms, drain_delay=1.0, name="ours-doomed"
        ),
    )
    await worker.arun()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
