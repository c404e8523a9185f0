"""QueueEvents (core/events.py): typed events from the stream, and case B22 (trim gaps)."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import pytest

from django_bullq import Queue
from django_bullq.core.events import QueueEvent, QueueEvents, next_id, parse_entry
from tests.support.redis_server import redis_version
from tests.support.workerkit import make_worker, run_until


def ids(stream_id: str) -> tuple[int, ...]:
    return tuple(int(x) for x in stream_id.split("-"))


def test_parse_entry_decodes_json_fields() -> None:
    done = parse_entry(
        b"1-2",
        {b"event": b"completed", b"jobId": b"7", b"returnvalue": b'{"a":1}', b"prev": b"active"},
    )
    assert done == QueueEvent("completed", "1-2", "7", {"returnvalue": {"a": 1}, "prev": "active"})
    assert parse_entry("1-3", {"event": "progress", "jobId": "7", "data": "42"}).fields == {
        "data": 42
    }
    assert parse_entry("1-4", {"event": "delayed", "jobId": "7", "delay": "1700"}).fields == {
        "delay": 1700
    }
    assert (
        parse_entry("1-5", {"event": "completed", "jobId": "7", "returnvalue": "not json"}).fields[
            "returnvalue"
        ]
        == "not json"
    )
    assert parse_entry("1-6", {"event": "drained"}).job_id is None
    assert next_id("5-9") == "5-10"


async def test_async_iterator_from_dollar_sees_only_new_events(queue: Queue) -> None:
    await queue.aadd("before", {})
    reader = QueueEvents(queue, block_ms=50)
    assert await reader.aread() == []  # "$" resolved to the stream's last entry
    job = await queue.aadd("after", {})
    seen: list[QueueEvent] = []
    async for event in reader:
        seen.append(event)
        if len(seen) == 2:
            reader.close()
    assert [(e.event, e.job_id) for e in seen] == [("added", job.id), ("waiting", job.id)]
    assert seen[0].fields == {"name": "after"}


async def test_case_b22_reader_keeping_up_counts_every_completed_job(queue: Queue) -> None:
    """B22, scaled: 5,000 fast jobs (the case says 50,000 with 8 processes) on 2 workers in one
    loop, default maxLenEvents 10,000, so the stream is trimmed while the reader reads."""
    total = 5_000
    reader = QueueEvents(queue, last_id="0", block_ms=200)
    completed: list[str] = []
    gaps: list[QueueEvent] = []

    async def listen() -> None:
        async for event in reader:
            if event.event == "completed":
                completed.append(str(event.job_id))
            elif event.event == "gap":
                gaps.append(event)
            if len(completed) >= total:
                reader.close()

    listener = asyncio.create_task(listen())
    for start in range(0, total, 1000):
        await queue.aadd_bulk([("t", {"i": i}) for i in range(start, start + 1000)])

    async def noop(job: Any) -> int:
        return 1

    w1 = make_worker(queue, noop, concurrency=8)
    w2 = make_worker(queue, noop, concurrency=8)
    task2 = asyncio.create_task(w2.arun())
    try:
        await run_until(w1, lambda: listener.done() or len(completed) >= total, timeout=30)
    finally:
        w2.close()
        await asyncio.wait_for(task2, 10)
    await asyncio.wait_for(listener, 10)
    assert gaps == []
    assert len(completed) == total and len(set(completed)) == total


def test_case_b22_lagging_reader_gets_a_gap_event(
    queue: Queue, r: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """B22 variant: the reader pauses while the stream (maxLenEvents 50) is trimmed; it then
    yields ``gap`` with the missing id range and logs a warning instead of going on silently.
    Uses the sync twin (``read`` / ``iter_events``)."""
    r.hset(queue.keys["meta"], "opts.maxLenEvents", 50)
    queue.add("first", {})
    reader = QueueEvents(queue, last_id="0", block_ms=10)
    first = reader.read()
    assert [e.event for e in first] == ["added", "waiting"]
    last_seen = reader.last_id

    queue.add_bulk([("t", {"i": i}) for i in range(400)])

    async def noop(job: Any) -> int:
        return 1

    asyncio.run(
        run_until(
            make_worker(queue, noop, concurrency=4),
            lambda: queue.get_job_counts("completed")["completed"] == 401,
        )
    )
    stream_first = r.xrange(queue.keys["events"], count=1)[0][0]
    with caplog.at_level(logging.WARNING, logger="django_bullq.events"):
        events = reader.read()
    gap = events[0]
    assert gap.event == "gap" and gap.job_id is None
    assert gap.fields["first"] == next_id(last_seen)
    assert ids(gap.fields["first"]) <= ids(gap.fields["last"]) < ids(stream_first)
    assert "trimmed" in caplog.text
    assert events[1].id == stream_first  # then every entry still present, in order
    assert reader.gaps == 1
    # reading on from there finds no further gap
    assert all(e.event != "gap" for e in reader.read())


def test_sync_iterator_stops_on_close(queue: Queue) -> None:
    queue.add("x", {})
    reader = QueueEvents(queue, last_id="0", block_ms=10)
    names = []
    started = time.monotonic()
    for event in reader.iter_events():
        names.append(event.event)
        if len(names) == 2:
            reader.close()
    assert names == ["added", "waiting"] and time.monotonic() - started < 5


async def test_deleted_entry_after_the_reader_is_a_gap(queue: Queue, r: Any) -> None:
    """From Redis 7.0 (Valkey too): XINFO STREAM has ``max-deleted-entry-id``, so an XDEL is
    a gap. Redis 6.2 has no such field: the deletion goes unseen (docs/redis-topologies.md)."""
    queue.add("a", {})
    reader = QueueEvents(queue, last_id="0", block_ms=10)
    assert len(await reader.aread()) == 2
    queue.add("b", {})
    added_b = r.xrange(queue.keys["events"])[-2][0]
    r.xdel(queue.keys["events"], added_b)  # XDEL, not trimming: caught by max-deleted-entry-id
    events = await reader.aread()
    if redis_version(r) < (7, 0):
        assert "max-deleted-entry-id" not in r.xinfo_stream(queue.keys["events"])
        assert [e.event for e in events] == ["waiting"] and reader.gaps == 0
        return
    assert [e.event for e in events] == ["gap", "waiting"]
    assert events[0].fields["last"] == added_b
