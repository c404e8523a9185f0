"""django_bullq as a Django project runs it: ``@task def`` functions, ``.enqueue()`` from
threads, ``Task.enqueue_many`` and ``manage.py runworker`` (the project is
``benchmarks/djangoproject``).

Processing runs the real management command in this process
(``execute_from_command_line(["manage.py", "runworker", queue, "--concurrency", N])``), so a job
goes through the task dispatch, the thread hop and the per-job database hygiene. The
``bullq-task-async`` (``async def`` tasks, ``.aenqueue()``), ``bullq-task-p2``
(``runworker --processes 2``) and ``bullq-task-pool`` (``@task(process=True)``) adapters are
this module run with another :class:`Flavour`.
"""

from __future__ import annotations

import cProfile
import enum
import os
import threading
import time
from typing import Any

from benchmarks.adapters import common

NO_BULK = "Task.enqueue_many missing"
CPU_ONLY = "CPU-bound rows only"


class Flavour(enum.Enum):
    """What a project writes and runs: ``def`` tasks, ``async def`` tasks, ``def`` tasks under
    ``runworker --processes 2``, or ``@task(process=True)``."""

    SYNC = "def"
    ASYNC = "async"
    PROCESSES = "processes"
    POOL = "pool"


def setup(spec: dict[str, Any]) -> None:
    """Point the bench's Django project at the spec's Redis and queue, then set Django up."""
    os.environ["DJANGO_SETTINGS_MODULE"] = "benchmarks.djangoproject.settings"
    os.environ["BENCH_REDIS_URL"] = spec["url"]
    os.environ["BENCH_QUEUE"] = spec["queue"]
    os.environ["BENCH_CPU_ITERATIONS"] = str(spec["cpu_iterations"])
    os.environ["BENCH_IO_MS"] = str(spec["io_ms"])
    os.environ["BENCH_REMOVE_COMPLETED"] = "1" if spec.get("remove_completed") else "0"
    import django

    django.setup()
    from django_bullq.core import eventloop

    # the loop runworker (and insert_async) will create from BULLQ["WORKER"]["EVENT_LOOP"]
    factory = eventloop.loop_factory(os.environ.get("BENCH_EVENT_LOOP", "auto"))
    common.set_event_loop("asyncio" if factory is None else "uvloop")
    # worker processes started from here count their requests (this one already does)
    os.environ["BENCH_COUNT_ROUND_TRIPS"] = "1"


def task_for(spec: dict[str, Any], flavour: Flavour) -> Any:
    """The bench task of the spec's work in this flavour."""
    from benchmarks.djangoproject import tasks

    work = spec.get("work", "noop")
    if flavour is Flavour.POOL:
        return tasks.cpu_process
    prefix = "a" if flavour is Flavour.ASYNC else ""
    return getattr(tasks, prefix + work)


def job_count(spec: dict[str, Any]) -> int:
    return int(spec["jobs"])


def bulk(task_: Any, spec: dict[str, Any]) -> float:
    start = time.perf_counter()
    calls = [(i,) for i in range(job_count(spec))]
    task_.enqueue_many(calls, chunk_size=int(spec["chunk"]))
    return time.perf_counter() - start


async def abulk(task_: Any, spec: dict[str, Any]) -> float:
    start = time.perf_counter()
    calls = [(i,) for i in range(job_count(spec))]
    await task_.aenqueue_many(calls, chunk_size=int(spec["chunk"]))
    return time.perf_counter() - start


def fill(task_: Any, spec: dict[str, Any]) -> None:
    """Put the run's jobs in the queue (not timed): the task's bulk enqueue, or before it
    exists the core ``Queue.add_bulk`` with the job data ``.enqueue(i)`` writes."""
    if hasattr(task_, "enqueue_many"):
        bulk(task_, spec)
        return
    from django_bullq.conf import get_queue

    queue = get_queue(spec["queue"])
    for part in common.chunks(job_count(spec), int(spec["chunk"])):
        queue.add_bulk([(task_.name, {"args": [i], "kwargs": {}}) for i in part])


def process(task_: Any, spec: dict[str, Any], flavour: Flavour) -> None:
    """Fill the queue, then run ``manage.py runworker`` in this process until the tally ends."""
    from django.core.management import execute_from_command_line

    from benchmarks.djangoproject import counter

    fill(task_, spec)
    tally = counter.RunTally(spec)
    if flavour in (Flavour.PROCESSES, Flavour.POOL):
        counter.listen(tally)  # the tasks run in other processes
    else:
        counter.TALLY = tally
    argv = ["manage.py", "runworker", spec["queue"], "--concurrency", str(spec["concurrency"])]
    if flavour is Flavour.PROCESSES:
        argv += ["--processes", "2"]
    common.ready_and_wait()
    if os.environ.get(counter.PROFILE_ENV):
        tally.profiler = cProfile.Profile()
        tally.profiler.enable()
    execute_from_command_line(argv)
    threading.Event().wait()  # runworker does not return before the tally ends the run


def main(spec: dict[str, Any], flavour: Flavour) -> None:
    cpu_variant = flavour in (Flavour.PROCESSES, Flavour.POOL)
    if cpu_variant and (spec["kind"] != "process" or spec.get("work") != "cpu"):
        common.not_applicable(CPU_ONLY)
    setup(spec)
    task_ = task_for(spec, flavour)
    if flavour is Flavour.ASYNC and spec["kind"] in ("bulk_insert", "single_insert"):
        from django_bullq.core import eventloop

        eventloop.run(insert_async(task_, spec), os.environ.get("BENCH_EVENT_LOOP", "auto"))
        return
    bulk_or_reason = (lambda: bulk(task_, spec)) if hasattr(task_, "enqueue_many") else NO_BULK
    common.dispatch_threads(
        spec, bulk_or_reason, task_.enqueue, lambda: process(task_, spec, flavour)
    )


async def insert_async(task_: Any, spec: dict[str, Any]) -> None:
    """The insert kinds of ``async def`` projects: ``aenqueue_many``, ``.aenqueue()``."""
    if spec["kind"] == "single_insert":
        await common.timed_coroutines(int(spec["producers"]), job_count(spec), task_.aenqueue)
        return
    if not hasattr(task_, "aenqueue_many"):
        common.not_applicable(NO_BULK)
    common.ready_and_wait()
    common.finish(job_count(spec), await abulk(task_, spec))


if __name__ == "__main__":
    common.count_round_trips()
    main(common.spec_from_argv(), Flavour.SYNC)
