"""Render ``docs/reliability.md`` from a soak report (the figures of ``make soak``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

COLUMNS = (
    ("enqueued", "enqueued"), ("completed", "completed"), ("failed", "failed"),
    ("lost", "lost"), ("ran_more_than_once", "ran twice"),
    ("active_at_kill", "active at a SIGKILL"),
    ("active_at_redis_restart", "active at the Redis restart"),
    ("ran_twice_outside_kills", "ran twice, not active at a kill/restart"),
    ("signals_sent", "signals"), ("unexpected_worker_exits", "worker crashes"),
    ("first_completion_after_redis_restart_s", "first completion after restart (s)"),
    ("seconds", "seconds"), ("jobs_per_second", "jobs/s"),
)

INTRO = """# Reliability

Nothing acknowledged is lost, workers never crash on bad input, and an orchestrator can tell a
live worker from a stuck one. This page gives the method and the figures of the committed chaos
soak (`reliability/soak-report.json`, written by `make soak`); the other guarantees are covered
by tests named in each section.

## Chaos soak

`make soak` (`python -m reliability.soak --jobs N`) runs three soaks of N jobs each (100,000 by
default; `make test` runs a short one, `tests/test_soak.py`). Each run has:

* a queue Redis with AOF (`appendfsync` as in the table) and a separate effects Redis that is
  never restarted;
* `--workers` real `manage.py runworker` processes of the soak project
  (`reliability/soakapp`: lock 4 s, stalled check every 2 s, 4 slots each);
* a producer thread adding jobs in batches of 500 with custom ids `s<n>`; 2 % get a random
  delay of up to 3 s. A batch cut by the Redis restart is sent again: a known id is not added
  twice (BullMQ's custom-id rule), so "enqueued" counts acknowledged jobs exactly;
* the task `soak.record(n)` sleeps 0–4 ms, then records its effect idempotently
  (`SADD soak:done n`, `HINCRBY soak:runs n 1` in one MULTI);
* a chaos loop: every 3 s one worker gets the run's signal and a fresh one replaces it;
  once 40 % of the jobs are done, the queue Redis is restarted (graceful SIGTERM with
  `everysec`, SIGKILL — a crash — with `always`). Kills stop at 90 % done so the tail
  recovers; then the run waits until every enqueued job is completed or failed.

Counted at the end: **lost** = enqueued ids with no recorded effect that are not in failed
(must be 0); **ran twice** = effects recorded more than once; each such job must have been
active on the worker at the moment it was SIGKILLed (read right after the kill: active jobs
whose `pb` is that worker's name) or active when Redis restarted (its finish call was cut, so
the stalled check re-ran it). A SIGTERM-only run must have 0 lost and 0 ran twice: the
worker stops fetching and finishes its jobs within the grace period.

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
    lines = [INTRO, "## Committed figures", "",
             f"Generated {report['generated']} on {machine['cpus']} CPU(s), Python "
             f"{machine['python']}, {machine['redis']} (load average at start "
             f"{', '.join(f'{x:.1f}' for x in machine['load_average_at_start'])}; the "
             "machine was shared, so throughput is indicative only).", ""]
    header = ["run"] + [label for _, label in COLUMNS]
    lines += ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    for run in report["runs"]:
        cfg, fig = run["config"], run["figures"]
        name = (f"SIG{cfg['signal']}, {cfg['workers']} workers, Redis restart "
                f"{cfg['redis_restart']}, appendfsync {cfg['appendfsync']}")
        lines.append("| " + " | ".join([name] + [_cell(fig.get(k)) for k, _ in COLUMNS]) + " |")
    lines += ["", "Cases:", ""]
    lines += [f"* **{case}**: {verdict}" for case, verdict in report["cases"].items()]
    lines.append(SEMANTICS)
    path.write_text("\n".join(lines))
