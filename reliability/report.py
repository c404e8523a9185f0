"""Render ``docs/reliability.md`` from a soak report (the figures of ``make soak``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

COLUMNS = (
    ("enqueued", "enqueued"),
    ("completed", "completed"),
    ("failed", "failed"),
    ("lost", "lost"),
    ("ran_more_than_once", "ran twice"),
    ("active_at_kill", "active at a SIGKILL"),
    ("active_at_redis_restart", "active at the Redis restart"),
    ("ran_twice_outside_kills", "ran twice, not active at a kill/restart"),
    ("signals_sent", "signals"),
    ("unexpected_worker_exits", "worker crashes"),
    ("first_completion_after_redis_restart_s", "first completion after restart (s)"),
    ("waiting_at_redis_restart", "jobs waiting at the restart"),
    ("delayed_due_after_redis_restart", "delayed jobs due after restart"),
    ("their_max_ms_late", "their max ms from due to finish"),
    ("seconds", "seconds"),
    ("jobs_per_second", "jobs/s"),
)

INTRO = """# Reliability

Nothing acknowledged is lost, workers never crash on bad input, and an orchestrator can tell a
live worker from a stuck one. This page gives the method and the figures of the committed chaos
soak (`reliability/soak-report.json`, written by `make soak`); the other guarantees are covered
by tests named in each section.

## Chaos soak

`make soak` (`python -m reliability.soak --jobs N`) runs three soaks of N jobs each (100,000 by
default; `make test` runs a short one, `tests/faults/test_soak.py`). Each run has:

* a queue Redis with AOF (`appendfsync` as in the table) and a separate effects Redis that is
  never restarted;
* `--workers` real `manage.py runworker` processes of the soak project
  (`reliability/soakapp`: lock 4 s, stalled check every 2 s, 4 slots each);
* a producer thread adding jobs in batches of 500 with custom ids `s<n>`; 2 % get a random
  delay of up to N × 0.8 ms (80 s for 100,000 jobs), so some come due after the restart.
  A batch cut by the Redis restart is sent again: a known id is not added
  twice (BullMQ's custom-id rule), so "enqueued" counts acknowledged jobs exactly;
* the task `soak.record(n)` sleeps 0–4 ms, then records its effect idempotently
  (`SADD soak:done n`, `HINCRBY soak:runs n 1` in one MULTI) in the effects Redis; jobs have
  `attempts: 3` (backoff 100 ms), as a production task would, so that a hiccup of the effects
  store on a loaded machine is retried (failures are counted, with their reasons, in the JSON);
* a chaos loop: every 3 s one worker gets the run's signal and a fresh one replaces it;
  once 40 % of the jobs are done, 20 more jobs are added with a delay of 3–6 s (B27's job A)
  and the queue Redis is restarted (graceful SIGTERM with
  `everysec`, SIGKILL — a crash — with `always`). Kills stop at 90 % done so the tail
  recovers; then the run waits until every enqueued job is completed or failed.

Counted at the end: **lost** = enqueued ids with no recorded effect that are not in failed
(must be 0); **ran twice** = effects recorded more than once; each such job must have been
active on the worker at the moment it was SIGKILLed (read right after the kill: active jobs
whose `pb` is that worker's name) or active when Redis restarted (its finish call was cut, so
the stalled check re-ran it). A SIGTERM-only run must have 0 lost and 0 ran twice: the
worker stops fetching and finishes its jobs within the grace period.

The producer enqueues everything up front, so the queue holds a backlog for most of the run: a
delayed job that comes due is promoted to the back of wait and finishes after the jobs ahead
of it ("jobs waiting at the restart" / "jobs/s" is the order of its wait). What B27 requires is
that it is promoted and run, not parked: every one of them completed.

Cases re-run under the soak: **B10** (worker termination loses the in-flight job) is every
SIGKILL and SIGTERM; **B27** (work stranded after a Redis restart) is the Redis restart with
active and delayed jobs in flight. Their verdicts are in the report's `cases`.
"""

SEMANTICS = """
## What the figures mean for your tasks

Delivery is *at least once*: a task whose worker dies (SIGKILL, OOM, power) after its effect
but before its finish reached Redis runs again once its lock expires (`LOCK_DURATION`, then the
next stalled check). Make effects idempotent (upserts, unique keys, the job id as a key).
SIGTERM (deploys, autoscaling) never causes a re-run when jobs finish within `GRACE_PERIOD`;
past it the worker hands unfinished jobs back to wait itself. With `appendfsync everysec` a
Redis *crash* may forget up to one second of acknowledged writes (jobs added, jobs finished);
use `appendfsync always` (the soak's hard-restart run) when that matters.
"""


def _cell(value: Any) -> str:
    if isinstance(value, list):
        return str(len(value))
    return "–" if value is None else str(value)


def write_docs(report: dict[str, Any], path: Path) -> None:
    """Write the page: method, a table of every run's figures, the case verdicts, semantics."""
    machine = report["machine"]
    load = ", ".join(f"{x:.1f}" for x in machine["load_average_at_start"])
    context = (
        f"Generated {report['generated']} on {machine['cpus']} CPU(s), Python "
        f"{machine['python']}, {machine['redis']} (load average at start {load}; the "
        "machine was shared, so throughput is indicative only)."
    )
    lines = [INTRO, "## Committed figures", "", context, ""]
    header = ["run"] + [label for _, label in COLUMNS]
    lines += ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    for run in report["runs"]:
        cfg, fig = run["config"], run["figures"]
        name = (
            f"SIG{cfg['signal']}, {cfg['workers']} workers, Redis restart "
            f"{cfg['redis_restart']}, appendfsync {cfg['appendfsync']}"
        )
        lines.append("| " + " | ".join([name] + [_cell(fig.get(k)) for k, _ in COLUMNS]) + " |")
    lines += ["", "Cases:", ""]
    lines += [f"* **{case}**: {verdict}" for case, verdict in report["cases"].items()]
    lines.append(SEMANTICS)
    lines.append(GUIDE)
    path.write_text("\n".join(lines))


GUIDE = """
## Connection faults

* **Producers fail fast.** Clients get `socket_connect_timeout=5` and `socket_timeout=30` (s)
  unless `OPTIONS` set them. `enqueue` / `Queue.add` / `add_bulk` on a Redis that refuses or
  does not answer raise `RedisUnavailableError` (a `BullqError` and a redis-py
  `ConnectionError`) whose message names `host:port` with the password hidden and the job
  being added (`tests/faults/test_connection_faults.py`).
* **Workers wait.** A worker started while Redis is down retries its fetch with a back-off
  (0.2 s doubling to 5 s) and starts working when Redis comes up. A cut network or a restarted
  Redis ends its blocking wait with an error; it reconnects and resumes (tested with a TCP proxy
  the test cuts and restores). A fetch that gets no answer is abandoned after 20 s.
* **Finishing through an outage.** If Redis is down when a job finishes, the worker retries the
  finish call while the job's lock can still be valid (`LOCK_DURATION`); a restarted Redis with
  AOF still holds the lock, so the job is finished once instead of re-run (case B27).
* **Liveness.** Each worker writes a heartbeat key, `<prefix>:<queue>:bullq:workers:<name>`,
  every 5 s with a 15 s TTL, and only while its fetch loop passes its checkpoints in time and
  Redis answers; a sorted set `<prefix>:<queue>:bullq:workers` keeps the last beat per name so
  that expired workers show as stale. A clean stop removes both. `manage.py bullq health`
  prints live and stale workers and exits 0/1 (see [workers.md](workers.md)).

## Bad input

`tests/faults/test_fuzz.py` (hypothesis) writes job hashes by hand with every field kept, dropped or
replaced by junk (invalid JSON, NaN, wrong types, non-integer counters, huge numbers), under ids
with colons, braces, spaces and unicode, next to a good job: no worker crash, every failed job
has a readable `failedReason`, the good job completes. It found two bugs, now fixed: a
non-integer `ats` / `atm` / `stc` made every fetch of the queue fail inside Lua (the whole queue
jammed), and `attemptsMade: "Infinity"` crashed the finish of that job. Task arguments
round-trip through Redis or are refused at enqueue with an error naming the task and the
argument. Job data is limited by `BULLQ["MAX_PAYLOAD_BYTES"]` (16 MiB by default, see
[configuration.md](configuration.md)): over it, enqueue raises `PayloadTooLargeError` naming
the task, and a worker fails a bigger job added by another producer without running it.
`tests/project/test_security_scan.py` fails if the package imports pickle, marshal or shelve, calls
`yaml.load`, `eval`, `exec` or `compile`, or if a Lua script loads code from text.
"""


def main(argv: list[str] | None = None) -> int:
    """``python -m reliability.report [REPORT.json] [PAGE.md]``: re-render the page."""
    import json
    import sys

    args = sys.argv[1:] if argv is None else argv
    root = Path(__file__).resolve().parent.parent
    report = Path(args[0]) if args else root / "reliability" / "soak-report.json"
    page = Path(args[1]) if len(args) > 1 else root / "docs" / "reliability.md"
    write_docs(json.loads(report.read_text()), page)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
