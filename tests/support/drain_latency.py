"""Redis latency of Queue.drain on a large queue: a bulk loader, and a by-hand run.

The loader writes jobs straight into Redis (one Lua call per 10,000 jobs: job hashes plus
their wait / prioritized / delayed entries, as addJob leaves them), so a million jobs take
seconds instead of a million ``add`` calls. The measurement reads Redis' own SLOWLOG (every
command over 1 ms, with its execution time in µs; a threshold of 0 would also log the
commands run inside the scripts and overflow the log), counts the script calls in INFO
commandstats, and pings from a second connection while the drain runs.

By hand (a private redis-server is started; figures are printed as JSON)::

    PYTHONPATH=. python -m tests.support.drain_latency --jobs 1000000
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import threading
import time
from dataclasses import asdict, dataclass
from typing import Any

import redis

from django_bullq import Queue

#: Jobs per loader call.
LOAD_CHUNK = 10_000

_LOADER = """
local prefix, first, last, now = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]
for i = first, last do
  local id = tostring(i)
  local kind = i % 3
  redis.call("HSET", prefix .. id, "name", "bulk", "data", "{}", "opts", '{"attempts":0}',
    "timestamp", now, "delay", kind == 2 and "60000" or "0", "priority", kind == 1 and "5" or "0",
    "atm", "0", "ats", "0")
  if kind == 0 then
    redis.call("LPUSH", prefix .. "wait", id)
  elseif kind == 1 then
    redis.call("ZADD", prefix .. "prioritized", 5 * 4294967296 + i, id)
  else
    redis.call("ZADD", prefix .. "delayed", (tonumber(now) + 60000) * 4096 + (i % 4096), id)
  end
end
redis.call("SET", prefix .. "id", last)
redis.call("SET", prefix .. "pc", last)
return last - first + 1
"""


def load_jobs(client: redis.Redis, key_prefix: str, jobs: int) -> None:
    """Write ``jobs`` jobs (ids 1..jobs): a third each in wait, prioritized and delayed."""
    loader = client.register_script(_LOADER)
    now = str(int(time.time() * 1000))
    for first in range(1, jobs + 1, LOAD_CHUNK):
        loader(args=[key_prefix, first, min(first + LOAD_CHUNK - 1, jobs), now])


@dataclass
class DrainLatency:
    """Figures of one drain run.

    Attributes:
        jobs: jobs loaded. removed: what drain returned. script_calls: EVALSHA calls during
        the drain (INFO commandstats). longest_call_ms: the longest drain call in SLOWLOG
        (Redis execution time; 0 when none took over 1 ms).
        ping_p99_ms / ping_max_ms: round trip of PINGs sent meanwhile from another connection.
        pings: how many were sent. wall_s: the drain's duration.
    """

    jobs: int
    removed: int
    script_calls: int
    longest_call_ms: float
    ping_p99_ms: float
    ping_max_ms: float
    pings: int
    wall_s: float


def slowlog_calls(client: redis.Redis, sha: str) -> list[int]:
    """Execution times (µs) of the EVALSHA calls of ``sha`` now in the SLOWLOG."""
    entries: list[dict[str, Any]] = client.slowlog_get(1_000_000)  # type: ignore[assignment]
    times = []
    for entry in entries:
        command = entry["command"]
        text = command.decode() if isinstance(command, bytes) else str(command)
        if text.lower().startswith("evalsha " + sha):
            times.append(int(entry["duration"]))
    return times


def _evalsha_calls(client: redis.Redis) -> int:
    stats: dict[str, Any] = client.info("commandstats")  # type: ignore[assignment]
    return int(stats.get("cmdstat_evalsha", {}).get("calls", 0))


def measure_drain(queue: Queue, url: str, jobs: int) -> DrainLatency:
    """Load ``jobs`` jobs into ``queue`` (empty), drain(delayed=True), return the figures.

    Sets ``slowlog-log-slower-than 1000`` (µs) for the drain with a log large enough for every
    drain call, and puts the server's settings back afterwards.
    """
    admin = redis.Redis.from_url(url)
    old = admin.config_get("slowlog-*")
    try:
        load_jobs(admin, queue.keys.key_prefix, jobs)
        admin.config_set("slowlog-max-len", 1_000_000)
        admin.config_set("slowlog-log-slower-than", 1000)
        admin.slowlog_reset()
        evalsha_before = _evalsha_calls(admin)
        pings: list[float] = []
        stop = threading.Event()

        def ping() -> None:
            other = redis.Redis.from_url(url)
            while not stop.is_set():
                start = time.perf_counter()
                # blocked past the socket timeout: count it so
                with contextlib.suppress(redis.TimeoutError):
                    other.ping()
                pings.append((time.perf_counter() - start) * 1000)
                time.sleep(0.001)
            other.close()

        pinger = threading.Thread(target=ping)
        pinger.start()
        start = time.perf_counter()
        removed = queue.drain(delayed=True)
        wall = time.perf_counter() - start
        stop.set()
        pinger.join()
        admin.config_set("slowlog-log-slower-than", -1)
        calls = slowlog_calls(admin, queue.scripts.sha("drain"))
        script_calls = _evalsha_calls(admin) - evalsha_before
        pings.sort()
        return DrainLatency(
            jobs=jobs,
            removed=removed,
            script_calls=script_calls,
            longest_call_ms=max(calls, default=0) / 1000,
            ping_p99_ms=pings[max(0, math.ceil(len(pings) * 0.99) - 1)] if pings else 0.0,
            ping_max_ms=pings[-1] if pings else 0.0,
            pings=len(pings),
            wall_s=wall,
        )
    finally:
        admin.config_set("slowlog-log-slower-than", old["slowlog-log-slower-than"])
        admin.config_set("slowlog-max-len", old["slowlog-max-len"])
        admin.slowlog_reset()
        admin.close()


def main() -> None:
    """Start a private redis-server, measure one drain of ``--jobs`` jobs, print JSON."""
    from tests.support.redis_server import RedisServer

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=150_000)
    jobs = parser.parse_args().jobs
    server = RedisServer().start()
    try:
        queue = Queue("drain-latency", server.url)
        print(json.dumps(asdict(measure_drain(queue, server.url, jobs))))
        queue.close()
    finally:
        server.stop()


if __name__ == "__main__":
    main()
