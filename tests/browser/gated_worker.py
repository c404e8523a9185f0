"""A django_bullq core worker for the browser tests, run as a subprocess.

``python -m tests.browser.gated_worker <redis url> <queue> <ack list key> [<worker name>]``

The worker is named (default ``gated``): BullMQ writes the name as the job's ``processedBy``
and in the worker's Redis client name, which the admin lists.

Job names:
``slow_progress``
    reports progress ``data["steps"]`` times (100/steps % each) and after each report waits
    (BLPOP) until the test pushes to the ack list: it has seen that value in the browser. So the
    test observes every step without any timing assumption. Returns ``{"steps": n}``.
``logs_slowly``
    writes the log line ``step i of n`` ``data["steps"]`` times, each followed by a wait for
    the test's acknowledgement (as ``slow_progress``). Returns ``{"logged": n}``.
``fails_once``
    raises on its first attempt (an HTML-laden message, to check escaping), succeeds after a retry.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from django_bullq import Job, Queue, Worker
from django_bullq.core.worker import WorkerOptions


async def main(url: str, queue_name: str, ack_key: str, name: str = "gated") -> None:
    queue = Queue(queue_name, url)
    acks = queue.aclient

    async def process(job: Job) -> Any:
        if job.name == "slow_progress":
            steps = int(job.data.get("steps", 4))
            for step in range(1, steps + 1):
                await job.aupdate_progress(step * 100 // steps)
                if await acks.blpop([ack_key], timeout=120) is None:
                    raise RuntimeError("the browser test never acknowledged the progress")
            return {"steps": steps}
        if job.name == "logs_slowly":
            steps = int(job.data.get("steps", 2))
            for step in range(1, steps + 1):
                await job.alog(f"step {step} of {steps}")
                if await acks.blpop([ack_key], timeout=120) is None:
                    raise RuntimeError("the browser test never acknowledged the log line")
            return {"logged": steps}
        if job.name == "fails_once":
            if job.attempts_started <= 1:
                raise RuntimeError("<b>weather feed</b> unavailable <script>alert(1)</script>")
            return "published"
        raise ValueError(f"unknown job name {job.name!r}")

    worker = Worker(queue, process, WorkerOptions(concurrency=4, drain_delay=0.5, name=name))
    print("ready", flush=True)
    await worker.arun(handle_signals=True)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
