"""Helpers of the interop tests: run the Node scripts of ``node/`` and our worker, bounded in time.

Every Node script is called as ``node node/<script>.mjs <redisUrl> <queueName> '<json spec>'``
with ``cwd=tests/interop`` (so ``bullmq`` resolves from ``tests/interop/node_modules``) and prints
one JSON document on its last stdout line.
"""

from __future__ import annotations

import asyncio
import json
import queue as queue_mod
import shutil
import subprocess
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import pytest
import redis

from django_bullq import Job, Queue, Worker
from django_bullq.core.worker import WorkerOptions

INTEROP_DIR = Path(__file__).resolve().parent
NODE_DIR = INTEROP_DIR / "node"
BULLMQ_PACKAGE = INTEROP_DIR / "node_modules" / "bullmq" / "package.json"
#: BullMQ 6.7 loads ioredis lazily as an optional peer dependency; package.json pins it.
IOREDIS_PACKAGE = INTEROP_DIR / "node_modules" / "ioredis" / "package.json"


def require_node_bullmq() -> str:
    """Path of ``node``; fails the test (never skips) when node or npm ``bullmq`` 6.x is missing."""
    node = shutil.which("node")
    if node is None:
        pytest.fail("interop tests need Node.js (`node` on PATH); `make test` expects Node 20+")
    if not (BULLMQ_PACKAGE.is_file() and IOREDIS_PACKAGE.is_file()):
        pytest.fail(
            f"npm bullmq / ioredis are not installed in {INTEROP_DIR / 'node_modules'}:"
            " run `make node-deps` (done by `make test`)"
        )
    version = json.loads(BULLMQ_PACKAGE.read_text())["version"]
    if not str(version).startswith("6."):
        pytest.fail(f"tests/interop pins npm bullmq 6.x, found {version}: run `make node-deps`")
    return node


class NodeScriptError(AssertionError):
    """A Node script exited non-zero, printed no JSON, or ran past its time limit."""


class NodeProcess:
    """One running script (Node, or Python for :mod:`tests.interop.our_worker_proc`); stdout
    lines are collected by a reader thread."""

    def __init__(self, args: list[str], script: str, cwd: Path = INTEROP_DIR) -> None:
        self.script = script
        self.proc = subprocess.Popen(
            args, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        self.lines: queue_mod.Queue[str | None] = queue_mod.Queue()
        self._stdout: list[str] = []
        self._stderr: list[str] = []
        self._threads = [
            threading.Thread(target=self._pump_stdout, daemon=True),
            threading.Thread(target=self._pump_stderr, daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    def _pump_stdout(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._stdout.append(line)
            self.lines.put(line)
        self.lines.put(None)

    def _pump_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self._stderr.append(line)

    def wait_ready(self, timeout: float = 10.0) -> None:
        """Wait for the script's ``{"ready": true}`` line."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.kill()
                raise NodeScriptError(f"{self.script}: not ready within {timeout} s")
            try:
                line = self.lines.get(timeout=remaining)
            except queue_mod.Empty:
                continue
            if line is None:
                self.result(1.0)  # raises with the script's stderr
                raise NodeScriptError(f"{self.script}: exited before it was ready")
            if json.loads(line).get("ready"):
                return

    def result(self, timeout: float = 20.0) -> dict[str, Any]:
        """Wait for the script to exit and return its JSON report."""
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise NodeScriptError(
                f"{self.script}: still running after {timeout} s; stderr:\n{''.join(self._stderr)}"
            ) from None
        for thread in self._threads:
            thread.join(5)
        if self.proc.returncode != 0:
            raise NodeScriptError(
                f"{self.script} exited {self.proc.returncode}; stderr:\n{''.join(self._stderr)}"
            )
        lines = [line for line in self._stdout if line.strip()]
        if not lines:
            raise NodeScriptError(f"{self.script} printed nothing; stderr:\n{self.stderr()}")
        report: dict[str, Any] = json.loads(lines[-1])
        return report

    async def aresult(self, timeout: float = 20.0) -> dict[str, Any]:
        """:meth:`result` without blocking the event loop."""
        return await asyncio.to_thread(self.result, timeout)

    def stderr(self) -> str:
        return "".join(self._stderr)

    def kill(self) -> None:
        """SIGKILL: the process gets no chance to clean up (a crashed worker)."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)


@dataclass
class Node:
    """The Node scripts bound to one Redis URL and queue name."""

    binary: str
    redis_url: str
    queue_name: str
    started: list[NodeProcess] = field(default_factory=list)

    def start(
        self, script: str, spec: dict[str, Any] | None = None, queue_name: str | None = None
    ) -> NodeProcess:
        args = [
            self.binary,
            str(NODE_DIR / f"{script}.mjs"),
            self.redis_url,
            queue_name or self.queue_name,
            json.dumps(spec or {}),
        ]
        proc = NodeProcess(args, script)
        self.started.append(proc)
        return proc

    def run(
        self, script: str, spec: dict[str, Any] | None = None, timeout: float = 20.0
    ) -> dict[str, Any]:
        return self.start(script, spec).result(timeout)

    async def arun(
        self, script: str, spec: dict[str, Any] | None = None, timeout: float = 20.0
    ) -> dict[str, Any]:
        return await self.start(script, spec).aresult(timeout)

    # shortcuts -----------------------------------------------------------------------------

    def add(self, jobs: list[dict[str, Any]]) -> list[str]:
        return [str(i) for i in self.run("add", {"jobs": jobs})["ids"]]

    def inspect(
        self, job_ids: list[str] | None = None, do: list[str] | None = None, *, logs: bool = False
    ) -> dict[str, Any]:
        return self.run("inspect", {"job_ids": job_ids or [], "do": do or [], "logs": logs})

    async def ainspect(
        self,
        job_ids: list[str] | None = None,
        do: list[str] | None = None,
        *,
        logs: bool = False,
        ranges: list[str] | None = None,
        workers: bool = False,
        allow_errors: bool = False,
        max_len_events: int | None = None,
    ) -> dict[str, Any]:
        """``node/inspect.mjs``; an action of ``do`` that throws fails the test unless
        ``allow_errors`` (then read ``report["done"]``)."""
        spec: dict[str, Any] = {
            "job_ids": job_ids or [],
            "do": do or [],
            "logs": logs,
            "ranges": ranges or [],
            "workers": workers,
        }
        if max_len_events is not None:
            spec["max_len_events"] = max_len_events
        report = await self.arun("inspect", spec)
        errors = [d for d in report["done"] if "error" in d]
        if errors and not allow_errors:
            raise NodeScriptError(f"inspect actions failed: {errors}")
        return report

    def close(self) -> None:
        for proc in self.started:
            proc.kill()


# --- the processor contract shared by Node, PyPI bullmq and our worker -----------------------


class Boom(Exception):
    """The error a test processor raises for a failed attempt."""


def behave(data: Any, attempts_made: int, by: str) -> Any:
    """Outcome of one attempt from the job data (same contract as ``node/worker.mjs``).

    ``fail_times``: raise ``Boom("fail <attempts_made>")`` while attempts_made < fail_times;
    ``result``: the return value; default ``{"by", "i", "attempt"}``.
    """
    data = data if isinstance(data, dict) else {}
    if attempts_made < int(data.get("fail_times") or 0):
        raise Boom(f"fail {attempts_made}")
    if "result" in data:
        return data["result"]
    return {"by": by, "i": data.get("i"), "attempt": attempts_made}


@dataclass
class Call:
    id: str
    name: str
    data: Any
    attempts_made: int
    t: int


def our_processor(calls: list[Call]) -> Callable[[Job], Awaitable[Any]]:
    """An async processor for our Worker that records calls and follows :func:`behave`."""

    async def process(job: Job) -> Any:
        data = job.data if isinstance(job.data, dict) else {}
        calls.append(Call(job.id, job.name, job.data, job.attempts_made, int(time.time() * 1000)))
        if "progress" in data:
            await job.aupdate_progress(data["progress"])
        if data.get("sleep_ms"):
            await asyncio.sleep(data["sleep_ms"] / 1000)
        return behave(data, job.attempts_made, "ours")

    return process


async def wait_for(
    predicate: Callable[[], Awaitable[bool]],
    timeout: float,
    what: str,
    watch: asyncio.Task[Any] | None = None,
) -> None:
    """Poll ``predicate`` until true; fail after ``timeout`` s (or when ``watch`` dies)."""
    deadline = time.monotonic() + timeout
    while not await predicate():
        if watch is not None and watch.done():
            watch.result()  # re-raise the worker's crash
            raise AssertionError(f"worker stopped before {what}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        await asyncio.sleep(0.05)


async def finished_count(q: Queue) -> int:
    counts = await q.aget_job_counts("completed", "failed")
    return counts["completed"] + counts["failed"]


async def run_our_worker_until(
    q: Queue,
    calls: list[Call],
    finished: int,
    timeout: float = 15.0,
    options: WorkerOptions | None = None,
    during: Callable[[], Awaitable[None]] | None = None,
    *,
    until_calls: bool = False,
) -> Worker:
    """Run our Worker until ``finished`` jobs are completed or failed, then close it.

    ``during`` (optional) runs concurrently once the worker started, before the wait.
    ``until_calls``: count processor calls instead, and also wait until nothing is left to run
    (for jobs that removeOnComplete / removeOnFail take out of the counts).
    """
    worker = Worker(
        q, our_processor(calls), options or WorkerOptions(concurrency=1, drain_delay=1.0)
    )
    task = asyncio.create_task(worker.arun())
    try:
        if during is not None:
            await during()
        if until_calls:
            await wait_for(
                lambda: _calls_and_idle(q, calls, finished),
                timeout,
                f"{finished} processor calls and an idle queue",
                watch=task,
            )
        else:
            await wait_for(
                lambda: _at_least(q, finished), timeout, f"{finished} finished jobs", watch=task
            )
    finally:
        worker.close()
        await asyncio.wait_for(task, 10)
    return worker


async def _at_least(q: Queue, n: int) -> bool:
    return await finished_count(q) >= n


async def _calls_and_idle(q: Queue, calls: list[Call], n: int) -> bool:
    if len(calls) < n:
        return False
    counts = await q.aget_job_counts("waiting", "active", "delayed", "prioritized")
    return sum(counts.values()) == 0


def stream_events(r: redis.Redis, queue_name: str, prefix: str = "bull") -> list[dict[str, str]]:
    """Every entry of the queue's events stream, oldest first (a decoding client)."""
    entries = cast(list[tuple[str, dict[str, str]]], r.xrange(f"{prefix}:{queue_name}:events"))
    return [fields for _, fields in entries]


def must_get(q: Queue, job_id: str) -> Job:
    """Our reading of a job that must exist."""
    job = q.get_job(job_id, required=True)
    assert job is not None
    return job
