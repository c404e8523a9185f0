"""django_bullq's own job metrics (issue 15 item 5): the recorder, the store and the reader,
against a real Redis; and a real worker recording by default."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
import redis
from redis.exceptions import ConnectionError as RedisConnectionError

from django_bullq import Job, Queue, UnrecoverableError
from django_bullq.core.metrics import MetricsRecorder, histogram, read_series, store
from django_bullq.core.metrics.reader import per_minute
from django_bullq.core.options import now_ms
from tests.support.redis_server import expire_at_ms
from tests.support.workerkit import make_worker, run_until

#: 30 s into the current hour (expiries count from the bucket: a time of long ago is gone).
T0 = now_ms() // 3_600_000 * 3_600_000 + 30_000


def _job(name: str, *, created: int, started: int, attempts_made: int = 0, delay: int = 0) -> Job:
    job = Job(None, "1", name=name, timestamp=created, delay=delay, processed_on=started)
    job.attempts_made = attempts_made
    return job


def _metric_keys(r: redis.Redis, queue: Queue) -> list[str]:
    return sorted(r.scan_iter(match=queue.keys["bullq:metrics:*"], count=1000))


def test_histogram_buckets_cover_every_duration_in_order() -> None:
    previous = 0
    for ms in [*range(0, 5000), 65_535, 65_536, 10**9, histogram.MAX_MS]:
        index = histogram.bucket(ms)
        low, high = histogram.bounds(index)
        assert low <= ms < high and index >= previous
        assert high - low <= max(1, low // 4)  # a bucket is at most a quarter of its low end
        previous = index
    assert histogram.bucket(-5) == 0 and histogram.bucket(10**15) == histogram.LAST
    with pytest.raises(ValueError):
        histogram.bounds(histogram.LAST + 1)


async def test_recorder_aggregates_in_memory_and_flushes_one_write(
    queue: Queue, r: redis.Redis
) -> None:
    rec = MetricsRecorder(queue.keys)
    for _ in range(10):  # 10 completed runs of 40 ms that waited 5 ms, one minute
        rec.record(_job("mail", created=T0, started=T0 + 5), store.COMPLETED, T0 + 45)
    rec.record(_job("mail", created=T0, started=T0, attempts_made=1), store.RETRIED, T0 + 3)
    rec.record(_job("pdf", created=T0, started=T0 + 2), store.FAILED, T0 + 2002)
    assert rec.pending == 2  # (minute, name) entries, not one per job
    # this minute's and hour's keys, and the all-time totals
    assert await rec.aflush(queue) == 3 and rec.pending == 0
    assert await rec.aflush(queue) == 0  # nothing new: no round trip
    minute = json.loads(r.get(store.minute_key(queue.keys, T0 // 60_000)))
    b3, b40, b2000 = histogram.bucket(3), histogram.bucket(40), histogram.bucket(2000)
    assert minute == {
        # completed, failed, retried, run [first bucket, counts...], wait (first attempts)
        "mail": [10, 0, 1, [b3, 1, *([0] * (b40 - b3 - 1)), 10], [histogram.bucket(5), 10]],
        "pdf": [0, 1, 0, [b2000, 1], [histogram.bucket(2), 1]],
    }
    hour = json.loads(r.get(store.hour_key(queue.keys, T0 // 3_600_000)))
    assert hour == minute  # one minute so far: the hour holds the same counts
    totals = r.hgetall(queue.keys[store.TOTALS])
    # the same counts, then the sums of the run and wait durations (ms)
    assert json.loads(totals["n:mail"])[:7] == [*minute["mail"], 10 * 40 + 3, 10 * 5]
    assert json.loads(totals["n:pdf"])[:7] == [*minute["pdf"], 2000, 2]
    assert totals["q:names"] == "2" and "q:stalled" not in totals
    # a second worker flushing the same minute adds to it (mergeMetrics, atomic)
    other = MetricsRecorder(queue.keys)
    other.record(_job("mail", created=T0, started=T0 + 5), store.COMPLETED, T0 + 50)
    other.record(_job("new", created=T0, started=T0 + 5), store.COMPLETED, T0 + 50)
    await other.aflush(queue)
    again = json.loads(r.get(store.minute_key(queue.keys, T0 // 60_000)))
    assert again["mail"][0] == 11 and again["mail"][3][-1] == 11  # 45 ms: 40 ms's bucket
    assert again["pdf"] == minute["pdf"] and again["new"][0] == 1


async def test_hours_are_merged_once_a_minute_and_at_the_stop(queue: Queue, r: redis.Redis) -> None:
    rec = MetricsRecorder(queue.keys)
    hour_key = store.hour_key(queue.keys, T0 // 3_600_000)
    rec.record(_job("a", created=T0, started=T0), store.COMPLETED, T0)
    assert await rec.aflush(queue) == 3  # the first flush: the minute, the hour, the totals
    rec.record(_job("a", created=T0, started=T0), store.COMPLETED, T0)
    assert await rec.aflush(queue) == 2  # 5 s later: the minute and the totals
    assert json.loads(r.get(hour_key))["a"][0] == 1
    assert rec.pending == 1  # the hour's entry waits
    assert await rec.aflush(queue, final=True) == 1  # the stop: the hour, nothing else new
    assert json.loads(r.get(hour_key))["a"][0] == 2
    assert json.loads(r.get(store.minute_key(queue.keys, T0 // 60_000)))["a"][0] == 2


async def test_reader_percentiles_match_known_durations(queue: Queue) -> None:
    rec = MetricsRecorder(queue.keys)
    end = now_ms()
    for ms in range(1, 1001):  # runs of 1..1000 ms, waits of 2x that, over the last minutes
        finished = end - (ms % 50) * 60_000 // 50
        rec.record(
            _job("t", created=finished - 3 * ms, started=finished - ms), store.COMPLETED, finished
        )
    await rec.aflush(queue)
    series = read_series(queue, "1h", now_ms=end)
    total = series.total
    assert total.completed == 1000 and len(series.points) == 60
    assert sum(p.stats.completed for p in series.points) == 1000
    for fraction, true_ms in ((0.5, 500), (0.95, 950), (0.99, 990)):
        assert total.run_ms(fraction) == pytest.approx(true_ms, rel=0.125)
        assert total.wait_ms(fraction) == pytest.approx(2 * true_ms, rel=0.125)
    assert series.names["t"].completed == 1000
    assert read_series(queue, "1h", name="other", now_ms=end).total.completed == 0


async def test_reader_long_windows_roll_up_and_72h_reads_hours(queue: Queue) -> None:
    rec = MetricsRecorder(queue.keys)
    end = now_ms()
    for hours_ago in (0, 5, 23, 50, 71, 75):
        at = end - hours_ago * 3_600_000
        rec.record(_job("t", created=at - 10, started=at - 5), store.COMPLETED, at)
    await rec.aflush(queue)
    found = {w: read_series(queue, w, now_ms=end) for w in ("1h", "6h", "24h", "72h")}
    assert {w: s.total.completed for w, s in found.items()} == {
        "1h": 1,
        "6h": 2,
        "24h": 3,
        "72h": 5,  # 75 h ago is out of the window (and expired by then in real life)
    }
    assert [len(found[w].points) for w in ("6h", "24h", "72h")] == [72, 96, 72]
    assert found["72h"].step_s == 3600 and found["24h"].step_s == 900
    assert found["72h"].points[-1].stats.completed == 1  # the current hour is the last point
    with pytest.raises(ValueError, match="unknown metrics window"):
        read_series(queue, "1y")


async def test_store_is_bounded_in_time_names_and_name_length(queue: Queue, r: redis.Redis) -> None:
    rec = MetricsRecorder(queue.keys)
    end = now_ms()
    for i in range(store.MAX_NAMES + 50):
        rec.record(_job(f"task-{i:03d}", created=end, started=end), store.COMPLETED, end)
    rec.record(_job("x" * 5000, created=end, started=end), store.COMPLETED, end)
    await rec.aflush(queue)
    names = read_series(queue, "1h", now_ms=end).names
    assert len(names) == store.MAX_NAMES + 1  # 100 names, the rest under one
    assert names[store.OTHER].completed == 51
    assert all(len(n) <= store.MAX_NAME_CHARS for n in names)
    totals = r.hgetall(queue.keys[store.TOTALS])  # bounded by names, never expires
    assert int(totals["q:names"]) == store.MAX_NAMES and len(totals) == store.MAX_NAMES + 2
    assert r.ttl(queue.keys[store.TOTALS]) == -1
    now_s = end // 1000
    for key in _metric_keys(r, queue):
        if key == queue.keys[store.TOTALS]:
            continue
        ttl = r.ttl(key)
        level_s = 60 if ":m:" in key else 3600
        assert store.RETENTION_S - level_s <= ttl <= store.RETENTION_S + level_s, key
        assert expire_at_ms(r, key) // 1000 - now_s <= store.RETENTION_S + level_s


async def test_worker_records_by_default_and_flushes_at_close(queue: Queue, r: redis.Redis) -> None:
    def proc(job: Job) -> Any:
        if job.name == "bad":
            raise UnrecoverableError("no")
        if job.name == "flaky" and job.attempts_made == 0:
            raise ValueError("once")
        return None

    queue.add_bulk([("ok", {}) for _ in range(20)] + [("bad", {}), ("bad", {})])
    queue.add("flaky", {}, attempts=2)
    worker = make_worker(queue, proc)
    assert worker.opts.record_metrics is True
    await run_until(worker, lambda: worker.processed == 21 and worker.failed == 2)
    series = read_series(queue, "1h")
    assert series.total.completed == 21 and series.total.failed == 2
    assert series.total.retried == 1
    assert {n: (s.completed, s.failed, s.retried) for n, s in series.names.items()} == {
        "bad": (0, 2, 0),
        "flaky": (1, 0, 1),
        "ok": (20, 0, 0),
    }
    assert sum(series.total.run.values()) == 24  # every attempt that ended
    assert sum(series.total.wait.values()) == 23  # first attempts only
    assert per_minute(queue, 2)[0].completed + per_minute(queue, 2)[1].completed == 21


async def test_worker_with_metrics_off_writes_no_metrics_key(queue: Queue, r: redis.Redis) -> None:
    queue.add_bulk([("ok", {}) for _ in range(5)])
    worker = make_worker(queue, lambda job: None, record_metrics=False)
    await run_until(worker, lambda: worker.processed == 5)
    assert _metric_keys(r, queue) == []


async def test_outage_during_flush_neither_crashes_nor_stops_the_worker(
    queue: Queue, r: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Redis refusing the flush (3 times, as in an outage) while jobs run."""
    from django_bullq.core.worker import duties

    monkeypatch.setattr(duties, "FLUSH_INTERVAL_S", 0.05)
    real_batch = queue._abatch
    failures: list[int] = []

    async def flaky_batch(batch: Any) -> Any:
        if batch.calls[0].script == "mergeMetrics" and len(failures) < 3:
            failures.append(1)
            raise RedisConnectionError("Connection reset by peer (test)")
        return await real_batch(batch)

    monkeypatch.setattr(queue, "_abatch", flaky_batch)
    worker = make_worker(queue, lambda job: None)
    task = asyncio.create_task(worker.arun())
    for i in range(30):  # jobs keep coming while flushes fail
        queue.add("ok", {"i": i})
        await asyncio.sleep(0.01)
    await run_until_done(lambda: worker.processed == 30 and len(failures) == 3)
    queue.add_bulk([("late", {}) for _ in range(5)])
    await run_until_done(lambda: worker.processed == 35)
    worker.close()
    await asyncio.wait_for(task, 15)
    # the 3 refused, and maybe one in flight when the stop cancelled the duty
    assert worker._metrics is not None and worker._metrics.dropped_flushes in (3, 4)
    names = read_series(queue, "1h").names
    assert names["late"].completed == 5  # flushed once Redis answered again
    # what the failed flushes held was dropped (under load they may have held all 30)
    assert "ok" not in names or names["ok"].completed < 30


async def run_until_done(condition: Any, timeout: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        assert loop.time() < deadline, "condition not met in time"
        await asyncio.sleep(0.02)


async def test_obliterate_removes_the_metrics_keys(queue: Queue, r: redis.Redis) -> None:
    queue.add_bulk([("ok", {}) for _ in range(3)])
    worker = make_worker(queue, lambda job: None)
    await run_until(worker, lambda: worker.processed == 3)
    assert len(_metric_keys(r, queue)) == 3  # this minute's key, this hour's, the totals
    queue.obliterate()
    assert _metric_keys(r, queue) == []


async def test_a_minute_older_than_72_hours_is_not_kept(queue: Queue, r: redis.Redis) -> None:
    rec = MetricsRecorder(queue.keys)
    old = now_ms() - store.RETENTION_S * 1000 - 3_600_000 - 120_000
    rec.record(_job("t", created=old, started=old), store.COMPLETED, old)
    rec.record(_job("t", created=T0, started=T0), store.COMPLETED, T0)
    await rec.aflush(queue)
    assert r.exists(store.minute_key(queue.keys, old // 60_000)) == 0
    assert r.exists(store.hour_key(queue.keys, old // 3_600_000)) == 0
    assert r.exists(store.minute_key(queue.keys, T0 // 60_000)) == 1
