"""Dramatiq with its Redis broker: ``send()`` and an in-process Worker with ``concurrency``
threads (Dramatiq's default middleware; it prefetches twice as many messages as threads). No
result backend: it stores nothing of a finished message, so ``remove_completed`` changes
nothing."""

from __future__ import annotations

import threading
from typing import Any

import dramatiq
from dramatiq.brokers.redis import RedisBroker

from benchmarks.adapters import common, jobs


def work(broker: RedisBroker, actor: Any, spec: dict[str, Any]) -> None:
    jobs.TALLY = common.Tally(spec)
    jobs.BODY = common.sync_work(spec)
    for i in range(int(spec["jobs"])):
        actor.send(i)
    worker = dramatiq.Worker(broker, worker_threads=int(spec["concurrency"]), worker_timeout=100)
    common.ready_and_wait()
    jobs.TALLY.arm()
    worker.start()
    threading.Event().wait()


def main(spec: dict[str, Any]) -> None:
    broker = RedisBroker(url=spec["url"])  # type: ignore[no-untyped-call]
    dramatiq.set_broker(broker)
    actor = dramatiq.actor(actor_name="bench", queue_name=spec["queue"], max_retries=0)(
        jobs.run_job
    )
    common.dispatch_threads(
        spec,
        "no bulk enqueue: group() sends one message per actor call",
        actor.send,
        lambda: work(broker, actor, spec),
    )


if __name__ == "__main__":
    common.count_round_trips()
    main(common.spec_from_argv())
