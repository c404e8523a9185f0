"""Chaos soak: enqueue many jobs, kill workers and restart Redis, then count what was lost.

One run: a persistent redis-server for the queue (AOF, ``appendfsync`` as asked) and a second one
for the effects (never restarted); ``--workers`` ``manage.py runworker`` processes of the soak
project (``reliability/soakapp``); a producer thread adding jobs in batches with custom ids (a
batch cut by a Redis restart is re-sent: a known id is not added twice); a chaos loop that
signals one worker every ``--kill-every`` seconds (SIGKILL or SIGTERM) and starts a fresh one,
and restarts Redis once when 40 % of the jobs are done. Then it waits until every enqueued job
is completed or failed (or nothing moves for ``settle`` s) and counts.

``lost`` = acknowledged jobs with no effect that are not in failed (must be 0). ``ran_twice``
= jobs whose body completed more than once; each must have been active on a worker when it was
SIGKILLed (``active_at_kill``, read right after the kill: active jobs whose ``pb`` names it) or
when Redis restarted (``active_at_redis_restart``: a finish cut by the restart is re-run).

Usage: ``python -m reliability.soak [--jobs N] [--out FILE] [--docs FILE]``; ``make soak`` runs
the full set (kill + everysec/graceful restart, kill + always/hard restart, SIGTERM only).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import redis

from django_bullq import Queue
from django_bullq.core import heartbeat
from django_bullq.core.keys import QueueKeys
from tests.support.redis_server import RedisServer

from .report import write_docs

ROOT = Path(__file__).resolve().parent.parent
QUEUE = "soak"
TASK = "soak.record"
#: Job options of every soak job: a task whose effect store hiccups (a socket timeout on a
#: loaded machine) is retried, as a production task would be; failures stay counted.
RETRY = {"attempts": 3, "backoff": 100}
#: Delayed jobs added just before the Redis restart, due 3-6 s later (case B27's job A).
B27_DELAYED = 20


@dataclass(frozen=True, kw_only=True)
class RunConfig:
    """One soak run. Durations in s unless noted.

    Attributes:
        jobs: jobs to enqueue. workers: runworker processes. concurrency: slots per worker.
        signal: "KILL" or "TERM", sent to one worker every ``kill_every`` s.
        redis_restart: "none", "graceful" (SIGTERM: Redis fsyncs and exits) or "hard" (SIGKILL).
        appendfsync: AOF policy of the queue Redis ("everysec" or "always").
        job_ms: each job sleeps a random 0..job_ms ms. delayed_share: share of jobs added with a
            random delay of up to ``jobs`` x 0.8 ms (at least 3 s), so that some come due after
            the Redis restart (case B27: delayed work must not be stranded).
        settle: give up when no job finishes for this long.
    """

    jobs: int = 10_000
    workers: int = 2
    concurrency: int = 4
    signal: str = "KILL"
    kill_every: float = 3.0
    redis_restart: str = "graceful"
    appendfsync: str = "everysec"
    job_ms: float = 4.0
    delayed_share: float = 0.02
    batch: int = 500
    settle: float = 60.0
    seed: int = 1


@dataclass
class Counters:
    """What the chaos loop saw while the run went on."""

    signals: int = 0
    active_at_kill: set[str] = field(default_factory=set)
    active_at_restart: set[str] = field(default_factory=set)
    unexpected_exits: list[str] = field(default_factory=list)
    bad_term_exits: list[str] = field(default_factory=list)
    redis_restarted_at: float | None = None
    #: wall-clock ms when Redis answered again after the restart
    redis_back_ms: int | None = None
    #: jobs in wait right after the restart: the backlog a job due then queues behind
    waiting_at_restart: int | None = None
    first_done_after_restart_s: float | None = None
    enqueued: int = 0
    #: ids of the B27 delayed jobs added before the restart (``s<jobs + i>``)
    b27_ids: list[str] = field(default_factory=list)
    producer_retries: int = 0


class WorkerPool:
    """``--workers`` runworker subprocesses; any of them can be signalled and replaced."""

    def __init__(self, config: RunConfig, env: dict[str, str], logdir: Path) -> None:
        self.config = config
        self.env = env
        self.logdir = logdir
        self.generation = 0
        self.procs: dict[int, tuple[str, subprocess.Popen[bytes]]] = {}

    def start(self, slot: int) -> None:
        self.generation += 1
        name = f"w{slot}-g{self.generation}"
        log = open(self.logdir / f"{name}.log", "wb")  # noqa: SIM115 - owned by the child
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "django",
                "runworker",
                QUEUE,
                "--name",
                name,
                "--concurrency",
                str(self.config.concurrency),
                "-v",
                "0",
            ],
            cwd=ROOT,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        self.procs[slot] = (name, proc)

    def check_alive(self, counters: Counters) -> None:
        """Record and replace a worker that exited without being signalled (a crash)."""
        for slot, (name, proc) in list(self.procs.items()):
            if proc.poll() is not None:
                counters.unexpected_exits.append(f"{name} exit {proc.returncode}")
                self.start(slot)

    def wait_ready(self, slot: int, client: Any, timeout: float = 30.0) -> None:
        """Wait until the worker in ``slot`` is fetching (its heartbeat key exists)."""
        name, proc = self.procs[slot]
        key = heartbeat.beat_key(QueueKeys(QUEUE), name)
        deadline = time.monotonic() + timeout
        while proc.poll() is None and time.monotonic() < deadline:
            if _retrying(lambda: client.exists(key)):
                return
            time.sleep(0.05)

    def signal(self, slot: int, sig: signal.Signals) -> tuple[str, int]:
        """Send ``sig`` to the worker in ``slot`` and wait for it to exit; returns (name, code)."""
        name, proc = self.procs[slot]
        proc.send_signal(sig)
        try:
            code = proc.wait(self.config.concurrency + 30)
        except subprocess.TimeoutExpired:
            proc.kill()
            code = proc.wait()
        return name, code

    def stop_all(self, client: Any) -> list[str]:
        """SIGTERM every worker once it is fetching (a replacement still importing Django has
        no handler yet and would end with -15, as the chaos loop's signals also wait for);
        returns those that did not exit 0."""
        for slot, (_, proc) in self.procs.items():
            self.wait_ready(slot, client)
            proc.send_signal(signal.SIGTERM)
        bad = []
        for name, proc in self.procs.values():
            try:
                code = proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                code = proc.wait()
            if code != 0:
                bad.append(f"{name} exit {code}")
        return bad


def _produce(queue: Queue, config: RunConfig, counters: Counters, stop: threading.Event) -> None:
    rng = random.Random(config.seed)
    for start in range(0, config.jobs, config.batch):
        batch = []
        for n in range(start, min(start + config.batch, config.jobs)):
            opts: dict[str, Any] = {"job_id": f"s{n}", **RETRY}
            if rng.random() < config.delayed_share:
                opts["delay"] = rng.randint(1, max(3000, int(config.jobs * 0.8)))
            batch.append(
                (TASK, {"args": [n, round(rng.random() * config.job_ms, 2)], "kwargs": {}}, opts)
            )
        while not stop.is_set():
            try:
                queue.add_bulk(batch)
                break
            except (redis.ConnectionError, redis.TimeoutError):
                counters.producer_retries += 1
                time.sleep(0.2)
        counters.enqueued += len(batch)


def _add_b27_jobs(queue: Queue, config: RunConfig, counters: Counters) -> None:
    """B27's job A: delayed jobs that are not due yet when Redis goes down."""
    numbers = range(config.jobs, config.jobs + B27_DELAYED)
    queue.add_bulk(
        [
            (
                TASK,
                {"args": [n, 0], "kwargs": {}},
                {"job_id": f"s{n}", "delay": 3000 + 150 * (n - config.jobs), **RETRY},
            )
            for n in numbers
        ]
    )
    counters.b27_ids = [f"s{n}" for n in numbers]


def _snapshot_active(client: Any, worker_name: str) -> set[str]:
    """Active jobs held by ``worker_name`` (its ``pb``), read right after it was killed."""
    ids = list(client.lrange(f"bull:{QUEUE}:active", 0, -1))
    if not ids:
        return set()
    pipe = client.pipeline(transaction=False)
    for job_id in ids:
        pipe.hget(f"bull:{QUEUE}:{job_id}", "pb")
    owners = pipe.execute()
    return {job_id for job_id, pb in zip(ids, owners, strict=True) if pb == worker_name}


def _retrying(call: Any, attempts: int = 100) -> Any:
    """Run ``call()``, retrying through a Redis restart (loading / refused)."""
    for _ in range(attempts - 1):
        try:
            return call()
        except (redis.ConnectionError, redis.TimeoutError):
            time.sleep(0.1)
    return call()


def _finished_jobs(client: Any) -> int:
    """Jobs completed or failed. Every effect can be in while a job whose effect landed just
    before a kill still waits for its stalled recovery to complete it."""
    return int(
        _retrying(lambda: client.zcard(f"bull:{QUEUE}:completed"))
        + _retrying(lambda: client.zcard(f"bull:{QUEUE}:failed"))
    )


def _chaos(
    config: RunConfig,
    pool: WorkerPool,
    server: RedisServer,
    client: Any,
    effects: Any,
    counters: Counters,
    producer: threading.Thread,
    queue: Queue,
) -> float:
    """Signal workers and restart Redis until 90 % is done; then wait for the rest.

    Returns:
        Seconds the run took until everything finished (or settled).
    """
    sig = signal.SIGKILL if config.signal == "KILL" else signal.SIGTERM
    start = time.monotonic()
    next_kill = start + config.kill_every
    slot = 0
    last_done, last_move = 0, start
    restart_due = config.redis_restart != "none"
    while True:
        time.sleep(0.05)
        now = time.monotonic()
        done = _retrying(lambda: effects.scard("soak:done"))
        finished = done + _retrying(lambda: client.zcard(f"bull:{QUEUE}:failed"))
        if done != last_done:
            last_done, last_move = done, now
            if (
                counters.redis_restarted_at is not None
                and counters.first_done_after_restart_s is None
            ):
                counters.first_done_after_restart_s = now - counters.redis_restarted_at
        target = counters.enqueued + len(counters.b27_ids)
        if not producer.is_alive() and finished >= target and _finished_jobs(client) >= target:
            return now - start
        if now - last_move > config.settle:
            return now - start
        pool.check_alive(counters)
        if restart_due and done >= config.jobs * 0.4:
            restart_due = False
            _add_b27_jobs(queue, config, counters)
            counters.active_at_restart = set(client.lrange(f"bull:{QUEUE}:active", 0, -1))
            server.restart(hard=config.redis_restart == "hard")
            counters.redis_restarted_at = time.monotonic()
            counters.redis_back_ms = int(time.time() * 1000)
            counters.waiting_at_restart = _retrying(lambda: client.llen(f"bull:{QUEUE}:wait"))
            # Jobs fetched between the snapshot and the shutdown are in the restored list.
            counters.active_at_restart |= _retrying(
                lambda: set(client.lrange(f"bull:{QUEUE}:active", 0, -1))
            )
            continue
        if now >= next_kill and done < config.jobs * 0.9:
            # Signal a worker that is up and fetching (SIGTERM while Django still imports
            # would just end the process: no handler yet, no jobs either).
            pool.wait_ready(slot, client)
            next_kill = time.monotonic() + config.kill_every
            name, code = pool.signal(slot, sig)
            counters.signals += 1
            if sig == signal.SIGKILL:
                counters.active_at_kill |= _retrying(
                    lambda name=name: _snapshot_active(client, name)
                )
            elif code != 0:
                counters.bad_term_exits.append(f"{name} exit {code}")
            pool.start(slot)
            slot = (slot + 1) % config.workers


def _delayed_after_restart(client: Any, counters: Counters) -> dict[str, Any]:
    """B27: delayed jobs that came due after the Redis restart, and how late they finished."""
    if counters.redis_back_ms is None:
        return {}
    ids = [f"s{n}" for n in range(counters.enqueued)] + counters.b27_ids
    pipe = client.pipeline(transaction=False)
    for job_id in ids:
        pipe.hmget(f"bull:{QUEUE}:{job_id}", "timestamp", "opts", "finishedOn")
    late = []
    for timestamp, opts, finished in pipe.execute():
        delay = int(json.loads(opts or "{}").get("delay", 0))  # the hash's delay is reset
        due = int(timestamp or 0) + delay
        if delay > 0 and due > counters.redis_back_ms and finished:
            late.append(int(finished) - due)
    return {
        "waiting_at_redis_restart": counters.waiting_at_restart,
        "delayed_due_after_redis_restart": len(late),
        "their_max_ms_late": max(late) if late else None,
    }


def _count(
    config: RunConfig, client: Any, effects: Any, counters: Counters, seconds: float
) -> dict[str, Any]:
    done = set(effects.smembers("soak:done"))
    runs = {k: int(v) for k, v in effects.hgetall("soak:runs").items()}
    failed_ids = set(client.zrange(f"bull:{QUEUE}:failed", 0, -1))
    pipe = client.pipeline(transaction=False)
    for job_id in sorted(failed_ids)[:20]:
        pipe.hget(f"bull:{QUEUE}:{job_id}", "failedReason")
    reasons = sorted({str(r) for r in pipe.execute()})
    enqueued = {f"s{n}" for n in range(counters.enqueued)} | set(counters.b27_ids)
    twice = {f"s{n}" for n, count in runs.items() if count > 1}
    lost = enqueued - {f"s{n}" for n in done} - failed_ids
    return {
        "enqueued": len(enqueued),
        "completed": client.zcard(f"bull:{QUEUE}:completed"),
        "effects_recorded": len(done),
        "failed": len(failed_ids),
        "failed_reasons_sample": reasons,
        "lost": len(lost),
        "lost_ids_sample": sorted(lost)[:20],
        "ran_more_than_once": len(twice),
        "active_at_kill": len(counters.active_at_kill),
        "active_at_redis_restart": len(counters.active_at_restart),
        "ran_twice_outside_kills": len(
            twice - counters.active_at_kill - counters.active_at_restart
        ),
        "signals_sent": counters.signals,
        "unexpected_worker_exits": counters.unexpected_exits,
        "sigterm_exits_not_0": counters.bad_term_exits,
        "producer_batch_retries": counters.producer_retries,
        "redis_restart": config.redis_restart,
        "first_completion_after_redis_restart_s": (
            round(counters.first_done_after_restart_s, 2)
            if counters.first_done_after_restart_s is not None
            else None
        ),
        **_delayed_after_restart(client, counters),
        "seconds": round(seconds, 1),
        "jobs_per_second": round(len(enqueued) / seconds, 1) if seconds else None,
    }


def run(config: RunConfig, logdir: Path | None = None) -> dict[str, Any]:
    """Run one soak; returns its configuration and figures (see the module doc)."""
    logdir = Path(logdir or tempfile.mkdtemp(prefix="bullq-soak-"))
    logdir.mkdir(parents=True, exist_ok=True)
    server = RedisServer(persistent=True, appendfsync=config.appendfsync).start()
    side = RedisServer().start()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "reliability.soakapp.settings",
        "BULLQ_SOAK_REDIS_URL": server.url,
        "BULLQ_SOAK_EFFECTS_URL": side.url,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    pool = WorkerPool(config, env, logdir)
    client: Any = redis.Redis.from_url(server.url, decode_responses=True)
    effects: Any = redis.Redis.from_url(side.url, decode_responses=True)
    queue = Queue(QUEUE, server.url)
    counters = Counters()
    stop = threading.Event()
    try:
        for slot in range(config.workers):
            pool.start(slot)
        producer = threading.Thread(
            target=_produce, args=(queue, config, counters, stop), daemon=True
        )
        producer.start()
        seconds = _chaos(config, pool, server, client, effects, counters, producer, queue)
        stop.set()
        producer.join(30)
        counters.bad_term_exits += pool.stop_all(client)
        figures = _count(config, client, effects, counters, seconds)
    finally:
        stop.set()
        for _, proc in pool.procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        queue.close()
        client.close()
        effects.close()
        server.cleanup()
        side.cleanup()
    return {"config": asdict(config), "figures": figures, "logs": str(logdir)}


def full_set(jobs: int, workers: int) -> list[RunConfig]:
    """The runs of ``make soak``: SIGKILL with both AOF policies, then SIGTERM only."""
    return [
        RunConfig(
            jobs=jobs,
            workers=workers,
            signal="KILL",
            redis_restart="graceful",
            appendfsync="everysec",
        ),
        RunConfig(
            jobs=jobs, workers=workers, signal="KILL", redis_restart="hard", appendfsync="always"
        ),
        RunConfig(
            jobs=jobs, workers=workers, signal="TERM", redis_restart="none", appendfsync="everysec"
        ),
    ]


def machine() -> dict[str, Any]:
    """Where the run happened (so figures are read with their context)."""
    version = subprocess.run(
        ["redis-server", "--version"], capture_output=True, text=True, check=False
    ).stdout.strip()
    return {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "redis": version,
        "load_average_at_start": list(os.getloadavg()),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--jobs", type=int, default=100_000, help="jobs per run")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", default=str(ROOT / "reliability" / "soak-report.json"))
    parser.add_argument("--docs", default=str(ROOT / "docs" / "reliability.md"))
    args = parser.parse_args(argv)
    # SIGTERM ends the soak like Ctrl-C: run's cleanup stops its Redis servers and workers.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    report: dict[str, Any] = {
        "generated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": machine(),
        "runs": [],
    }
    for config in full_set(args.jobs, args.workers):
        result = run(config)
        report["runs"].append(result)
        print(json.dumps(result["figures"]), flush=True)
    report["cases"] = cases(report["runs"])
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n")
    write_docs(report, Path(args.docs))
    ok = all(r["figures"]["lost"] == 0 for r in report["runs"])
    return 0 if ok else 1


def cases(runs: list[dict[str, Any]]) -> dict[str, str]:
    """B10 and B27 verdicts from the figures of the runs."""
    kills = [r["figures"] for r in runs if r["config"]["signal"] == "KILL"]
    terms = [r["figures"] for r in runs if r["config"]["signal"] == "TERM"]
    restarts = [r["figures"] for r in runs if r["config"]["redis_restart"] != "none"]
    b10 = all(f["lost"] == 0 and f["ran_twice_outside_kills"] == 0 for f in kills) and all(
        f["lost"] == 0 and f["ran_more_than_once"] == 0 for f in terms
    )
    b27 = all(
        f["lost"] == 0 and f["first_completion_after_redis_restart_s"] is not None for f in restarts
    )
    return {
        "B10": ("pass" if b10 else "FAIL") + ": workers SIGKILLed / SIGTERMed while jobs run; "
        "no job lost, re-runs only of jobs active at a SIGKILL, none after SIGTERM",
        "B27": ("pass" if b27 else "FAIL") + ": Redis restarted mid-run (graceful with "
        "everysec, SIGKILL with always); work, delayed jobs included, resumes and "
        "nothing is lost",
    }


if __name__ == "__main__":
    sys.exit(main())
