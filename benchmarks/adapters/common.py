"""What every Python adapter shares: the handshake, job tallying, the work itself, round trips.

A spec (JSON, the child's only argument) holds: ``url`` (Redis), ``queue``, ``kind``
(``bulk_insert`` | ``single_insert`` | ``process`` | ``memory``), ``jobs``, ``concurrency``,
``work`` (``noop`` | ``cpu`` | ``io``), ``cpu_iterations``, ``io_ms``, ``producers``,
``chunk`` (bulk chunk size), ``max_seconds`` (cap of a processing run, counted from the
start of the first job), ``remove_completed`` (bool: the worker removes each job's record and
result when it completes, for the ``*_removed`` scenarios; libraries that store nothing ignore
it) and, for the growth runs of django_bullq, ``keep_completed``.

The result line: ``{"jobs": int, "seconds": float, "round_trips": int | None}`` plus, for
``memory``, ``"rss_mb": [float, ...]``. For processing, ``seconds`` runs from the start of the
first job to the end of the last one, so a library's start-up time is not counted against it.
``round_trips`` is None ("not measured") when no counter saw the library's client send anything:
a client the counters of :func:`count_round_trips` do not know is never reported as 0.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import math
import os
import sys
import threading
import time
from collections.abc import Callable, Coroutine
from typing import Any

_sends = itertools.count()
_base = 0
#: The running loop's kind ("uvloop" / "asyncio"), noted by dispatch_async; "" for threads.
_loop = ""


def spec_from_argv() -> dict[str, Any]:
    """The JSON spec given as the only command-line argument."""
    spec: dict[str, Any] = json.loads(sys.argv[1])
    return spec


def count_round_trips() -> None:
    """Count every request the library's Redis client sends: its round trips.

    redis-py: each ``send_packed_command`` (a pipeline counts once; the commands a connection
    sends when it opens -- HELLO, AUTH, CLIENT SETINFO, SELECT -- go through it too, so a
    connection opened during the timed part is counted whole). coredis (streaq's client): each
    write of its connection's writer task (``ConnectionStatistics.data_sent``; its handshake
    goes through the same writer). A client neither of these sees reports None, never 0.
    """
    try:
        import redis.asyncio.connection as async_conn
        import redis.connection as sync_conn
    except ImportError:
        pass
    else:
        sync_send = sync_conn.AbstractConnection.send_packed_command
        async_send = async_conn.AbstractConnection.send_packed_command

        # check_health stays positional: these replace redis-py's send_packed_command.
        def send(self: Any, command: Any, check_health: bool = True) -> Any:  # noqa: FBT001, FBT002
            next(_sends)
            return sync_send(self, command, check_health)  # type: ignore[no-untyped-call]

        async def asend(self: Any, command: Any, check_health: bool = True) -> Any:  # noqa: FBT001, FBT002
            next(_sends)
            return await async_send(self, command, check_health)

        sync_conn.AbstractConnection.send_packed_command = send  # type: ignore[method-assign]
        async_conn.AbstractConnection.send_packed_command = asend  # type: ignore[method-assign]
    try:
        from coredis.connection._statistics import ConnectionStatistics
    except ImportError:
        return
    data_sent = ConnectionStatistics.data_sent

    def sent(self: Any, num_bytes: int) -> None:
        next(_sends)
        data_sent(self, num_bytes)

    ConnectionStatistics.data_sent = sent  # type: ignore[method-assign]


def round_trips() -> int | None:
    """Requests sent since :func:`ready_and_wait` returned; None when no counter saw any (a
    run that did jobs always sends something, so 0 means the client is not counted)."""
    sent = next(_sends) - _base - 1
    return sent if sent > 0 else None


def event_loop() -> str:
    """The loop every asyncio adapter runs on: uvloop when installed (as django_bullq's
    ``runworker`` picks it), ``asyncio``'s own when not or when ``BENCH_EVENT_LOOP=asyncio``."""
    if os.environ.get("BENCH_EVENT_LOOP", "auto") == "asyncio":
        return "asyncio"
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return "asyncio"
    return "uvloop"


def set_event_loop(name: str) -> None:
    """Name the loop this adapter runs on (``uvloop`` | ``asyncio``) for its result line, where
    it is not :func:`dispatch_async` that sees it (``runworker`` creates its own)."""
    global _loop
    _loop = name


def run_async(main: Coroutine[Any, Any, Any]) -> None:
    """Run an asyncio adapter's ``main`` on :func:`event_loop`'s loop."""
    if event_loop() == "uvloop":
        import uvloop

        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            runner.run(main)
    else:
        asyncio.run(main)


def emit(payload: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(payload) + "\n")
    sys.stdout.flush()


def not_applicable(reason: str) -> None:
    """Tell the harness this library cannot run the scenario, and exit."""
    emit({"na": reason})
    sys.exit(0)


#: this process's CPU time (user + system, s) when the timed part started
_cpu0 = 0.0


def _cpu_s() -> float:
    t = os.times()
    return t.user + t.system


def ready_and_wait() -> None:
    """Set-up is done: say so and block until the harness has read the server's counters."""
    global _base, _cpu0
    emit({"ready": True})
    sys.stdin.readline()
    _base = next(_sends)
    _cpu0 = _cpu_s()


def finish(jobs: int, seconds: float, **extra: Any) -> None:
    """Print the result line and leave at once (no library shutdown, which is not measured).

    The line carries ``cpu_s``: this process's CPU time from the handshake (s), which against
    the run's span tells a client bound by its own Python from one that waits.

    The line also names the event loop an asyncio adapter ran on (``event_loop``, noted by
    :func:`dispatch_async`)."""
    if _loop:
        extra["event_loop"] = _loop
    extra["cpu_s"] = _cpu_s() - _cpu0  # this process only (not worker processes it started)
    emit({"jobs": jobs, "seconds": seconds, "round_trips": round_trips(), **extra})
    os._exit(0)


def rss_mb() -> float:
    """Resident set size of this process, MB (Linux ``/proc/self/statm``)."""
    with open("/proc/self/statm") as fh:
        pages = int(fh.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 1e6


class Tally:
    """Counts processed jobs; ends the run at ``jobs`` jobs or ``max_seconds`` s after the first
    job started (so a worker's start-up never eats into the cap).

    ``started()`` / ``done()`` are called by the library's job function (any thread).
    With ``sample_rss``, the RSS is read at every 5% of the jobs.
    """

    def __init__(self, spec: dict[str, Any], *, sample_rss: bool = False) -> None:
        self.jobs = int(spec["jobs"])
        self.max_seconds = float(spec.get("max_seconds") or 0)
        self.count = 0
        self.first: float | None = None
        self.lock = threading.Lock()
        self.ended = False
        self.rss: list[float] = []
        self.every = max(self.jobs // 20, 1) if sample_rss else 0

    def arm(self) -> None:
        """Kept for adapters that call it after :func:`ready_and_wait`: the cap's timer now
        starts at the first :meth:`started`, so this does nothing."""

    def started(self) -> None:
        if self.first is not None:
            return
        with self.lock:
            if self.first is not None:
                return
            self.first = time.perf_counter()
        if self.max_seconds > 0:
            timer = threading.Timer(self.max_seconds, self.end)
            timer.daemon = True
            timer.start()

    def done(self) -> None:
        with self.lock:
            self.count += 1
            count = self.count
        if self.every and count % self.every == 0:
            self.rss.append(round(rss_mb(), 2))
        if count == self.jobs:
            self.end()

    def end(self) -> None:
        count = self.claim_end()
        if count is not None:
            self.report(count)

    def claim_end(self) -> int | None:
        """The jobs done, for the one caller that ends the run; None for any later one."""
        with self.lock:
            if self.ended:
                return None
            self.ended = True
            return self.count

    def report(self, count: int, **extra: Any) -> None:
        """Print the result line of ``count`` jobs (with the RSS samples) and leave."""
        seconds = time.perf_counter() - (self.first or time.perf_counter())
        if self.every:
            extra["rss_mb"] = self.rss
        finish(count, seconds, **extra)


def cpu_work(iterations: int) -> float:
    """The CPU-bound job: ``iterations`` sin/cos products summed."""
    total = 0.0
    for i in range(iterations):
        total += math.sin(i) * math.cos(i)
    return total


def sync_work(spec: dict[str, Any]) -> Callable[[], Any]:
    """The job's body for thread-based workers: no-op, CPU-bound or a blocking sleep."""
    work = spec.get("work", "noop")
    if work == "cpu":
        iterations = int(spec["cpu_iterations"])
        return lambda: cpu_work(iterations)
    if work == "io":
        seconds = spec["io_ms"] / 1000
        return lambda: time.sleep(seconds)
    return lambda: None


def async_work(spec: dict[str, Any]) -> Callable[[], Any]:
    """The job's body for asyncio workers: no-op, CPU-bound (on the loop) or ``asyncio.sleep``."""
    work = spec.get("work", "noop")
    if work == "cpu":
        iterations = int(spec["cpu_iterations"])

        async def cpu() -> float:
            return cpu_work(iterations)

        return cpu
    if work == "io":
        seconds = spec["io_ms"] / 1000

        async def io() -> None:
            await asyncio.sleep(seconds)

        return io

    async def noop() -> None:
        return None

    return noop


def chunks(total: int, size: int) -> list[range]:
    """``range(total)`` cut into ranges of at most ``size``."""
    return [range(start, min(start + size, total)) for start in range(0, total, size)]


def timed_threads(producers: int, total: int, add_one: Callable[[int], Any]) -> None:
    """Single inserts from ``producers`` threads, ``total`` in all; prints the result."""
    shares = [range(p, total, producers) for p in range(producers)]

    def produce(share: range) -> None:
        for i in share:
            add_one(i)

    threads = [threading.Thread(target=produce, args=(s,)) for s in shares]
    ready_and_wait()
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    finish(total, time.perf_counter() - start)


async def timed_coroutines(producers: int, total: int, add_one: Callable[[int], Any]) -> None:
    """Single inserts from ``producers`` coroutines on one loop, ``total`` in all."""

    async def produce(share: range) -> None:
        for i in share:
            await add_one(i)

    ready_and_wait()
    start = time.perf_counter()
    await asyncio.gather(*(produce(range(p, total, producers)) for p in range(producers)))
    finish(total, time.perf_counter() - start)


async def dispatch_async(
    spec: dict[str, Any],
    bulk: Callable[[], Any] | str,
    add_one: Callable[[int], Any],
    work: Callable[[], Any],
) -> None:
    """Run the spec's kind with an asyncio library's three coroutine functions.

    Args:
        bulk: ``() -> seconds`` inserting ``jobs`` jobs in chunks, or the reason the library
            has no bulk insert. add_one: ``(i) -> awaitable`` adding job ``i``. work: fills
            the queue (if needed), then processes it.
    """
    global _loop
    _loop = (
        "uvloop" if type(asyncio.get_running_loop()).__module__.startswith("uvloop") else "asyncio"
    )
    kind = spec["kind"]
    if kind == "bulk_insert":
        if isinstance(bulk, str):
            not_applicable(bulk)
            return
        ready_and_wait()
        finish(int(spec["jobs"]), await bulk())
    elif kind == "single_insert":
        await timed_coroutines(int(spec["producers"]), int(spec["jobs"]), add_one)
    else:
        await work()


def dispatch_threads(
    spec: dict[str, Any],
    bulk: Callable[[], float] | str,
    add_one: Callable[[int], Any],
    work: Callable[[], Any],
) -> None:
    """The same for a thread-based library; ``bulk`` may be the reason it has no bulk insert."""
    kind = spec["kind"]
    if kind == "bulk_insert":
        if isinstance(bulk, str):
            not_applicable(bulk)
            return
        ready_and_wait()
        finish(int(spec["jobs"]), bulk())
    elif kind == "single_insert":
        timed_threads(int(spec["producers"]), int(spec["jobs"]), add_one)
    else:
        work()
