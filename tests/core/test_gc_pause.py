"""The cyclic garbage collector paused while a bulk add builds its jobs (core/gc_pause.py):
paused only for big bulks, nested across threads, restored however the block ends, and left
disabled when the application disabled it; bulk adds on a real Redis run no collection."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator

import pytest

from django_bullq.core.errors import SerializationError
from django_bullq.core.gc_pause import MIN_JOBS, paused_gc
from django_bullq.core.queue import Queue


@pytest.fixture
def collections() -> Iterator[list[int]]:
    """The generations of the collections that start while the test runs."""
    started: list[int] = []

    def seen(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            started.append(info["generation"])

    gc.callbacks.append(seen)
    try:
        yield started
    finally:
        gc.callbacks.remove(seen)


@pytest.fixture(autouse=True)
def _collector_enabled() -> Iterator[None]:
    gc.enable()
    yield
    assert gc.isenabled(), "a test left the collector disabled"


def test_a_big_bulk_pauses_the_collector_and_its_end_restores_it() -> None:
    with paused_gc(MIN_JOBS):
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_small_bulk_leaves_the_collector_alone() -> None:
    with paused_gc(MIN_JOBS - 1):
        assert gc.isenabled()


def test_the_pause_ends_when_the_block_raises() -> None:
    with pytest.raises(ValueError, match="boom"), paused_gc(MIN_JOBS):
        raise ValueError("boom")
    assert gc.isenabled()


def test_a_collector_the_application_disabled_stays_disabled() -> None:
    gc.disable()
    try:
        with paused_gc(MIN_JOBS):
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_overlapping_pauses_of_two_threads_end_with_the_last() -> None:
    inside, release = threading.Event(), threading.Event()

    def other() -> None:
        with paused_gc(MIN_JOBS):
            inside.set()
            release.wait(5)

    thread = threading.Thread(target=other)
    with paused_gc(MIN_JOBS):
        thread.start()
        assert inside.wait(5)
    assert not gc.isenabled(), "the other thread's pause is still under way"
    release.set()
    thread.join(5)
    assert gc.isenabled()


def test_a_bulk_add_of_many_jobs_runs_no_collection(queue: Queue, collections: list[int]) -> None:
    given = [("n", {"i": i, "tags": [i]}) for i in range(5000)]
    collections.clear()  # those of building the list above
    jobs = queue.add_bulk(given, chunk_size=1000)
    # at most the one an allocation may set off as the pause begins (without it: about 25)
    assert len(collections) <= 1, "the collector ran while the bulk add built its jobs"
    assert len(jobs) == 5000 and queue.get_job_counts("waiting")["waiting"] == 5000
    assert gc.isenabled()


async def test_an_async_bulk_add_of_many_jobs_runs_no_collection(
    queue: Queue, collections: list[int]
) -> None:
    given = [("n", {"i": i, "tags": [i]}) for i in range(5000)]
    collections.clear()
    jobs = await queue.aadd_bulk(given)
    assert len(collections) <= 1
    assert len(jobs) == 5000
    assert gc.isenabled()


def test_a_bulk_add_refused_midway_restores_the_collector(queue: Queue) -> None:
    jobs: list[tuple[str, object]] = [("n", {"i": i}) for i in range(5000)]
    jobs[3000] = ("n", {"bad": {1, 2}})
    with pytest.raises(SerializationError, match=r"data of job 'n' \(item 3000 of the bulk add\)"):
        queue.add_bulk(jobs)
    assert gc.isenabled()
    assert queue.get_job_counts("waiting")["waiting"] == 0
