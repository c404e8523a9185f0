"""Celery with its Redis broker: ``delay()`` and an in-process worker on the threads pool
(no result backend, no heartbeat/mingle/gossip; other settings Celery's defaults). It stores
nothing of a finished task, so ``remove_completed`` changes nothing."""

from __future__ import annotations

from typing import Any

from celery import Celery

from benchmarks.adapters import common, jobs


def make_app(spec: dict[str, Any]) -> Any:
    app = Celery("bench", broker=spec["url"])
    app.conf.update(
        task_default_queue=spec["queue"],
        task_ignore_result=True,
        broker_connection_retry_on_startup=True,
        worker_hijack_root_logger=False,
        worker_redirect_stdouts=False,
    )
    return app


def work(app: Any, task: Any, spec: dict[str, Any]) -> None:
    jobs.TALLY = common.Tally(spec)
    jobs.BODY = common.sync_work(spec)
    for i in range(int(spec["jobs"])):
        task.delay(i)
    worker = app.Worker(
        pool_cls="threads",
        concurrency=int(spec["concurrency"]),
        loglevel="WARNING",
        without_heartbeat=True,
        without_mingle=True,
        without_gossip=True,
        quiet=True,
    )
    common.ready_and_wait()
    jobs.TALLY.arm()
    worker.start()


def main(spec: dict[str, Any]) -> None:
    app = make_app(spec)
    task = app.task(name="bench")(jobs.run_job)
    common.dispatch_threads(
        spec,
        "no bulk publish: group() and chunks() send one message per task",
        task.delay,
        lambda: work(app, task, spec),
    )


if __name__ == "__main__":
    common.count_round_trips()
    main(common.spec_from_argv())
