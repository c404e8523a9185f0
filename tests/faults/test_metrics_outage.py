"""A real network cut under a worker's metrics flush (issue 15 item 5): the flush fails, the
worker neither crashes nor stalls, and what it records after the cut reaches Redis."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from django_bullq import Queue
from django_bullq.core.metrics import read_series
from django_bullq.core.worker import duties
from tests.support.tcp_proxy import TcpProxy
from tests.support.workerkit import make_worker


async def _until(condition: Callable[[], bool], seconds: float, what: str) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while not condition():
        assert loop.time() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.02)


async def test_a_cut_during_the_metrics_flush_drops_a_flush_not_the_worker(
    redis_url: str, queue_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(duties, "FLUSH_INTERVAL_S", 1.0)
    port = int(redis_url.rsplit(":", 1)[1].split("/")[0])
    proxy = TcpProxy(port)
    queue = Queue(queue_name, f"redis://127.0.0.1:{proxy.port}/0")
    direct = Queue(queue_name, redis_url)
    worker = make_worker(queue, lambda job: None)
    recorder = worker._metrics
    assert recorder is not None
    task = asyncio.create_task(worker.arun())
    try:
        done = 0
        for _ in range(3):  # a cycle whose flush came before the cut drops nothing: again
            direct.add_bulk([("before", {}) for _ in range(5)])
            done += 5
            await _until(lambda n=done: worker.processed == n, 10, "the jobs before the cut")
            proxy.cut()  # the flush, due within 1 s, meets the cut with these counts
            await asyncio.sleep(1.5)
            proxy.restore()
            if recorder.dropped_flushes:
                break
        assert recorder.dropped_flushes >= 1
        direct.add_bulk([("after", {}) for _ in range(4)])
        await _until(lambda: worker.processed == done + 4, 15, "the jobs after the cut")
        await _until(
            lambda: "after" in read_series(direct, "1h").names, 10, "the flush after the cut"
        )
        assert read_series(direct, "1h").names["after"].completed == 4
        assert not task.done()
    finally:
        worker.close()
        await asyncio.wait_for(task, 15)
        queue.close()
        direct.close()
        proxy.close()
