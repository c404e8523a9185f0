"""The Schedules page's reads and writes: every job scheduler of a queue, its pattern in words,
its recent runs, and pause / resume / run now / remove / upsert.

Schedulers are BullMQ 6's job schedulers (docs/schedulers.md): zset ``repeat`` (member = id,
score = next run, ms) and hash ``repeat:<id>``; their runs are jobs ``repeat:<id>:<ms>``.

**Pausing one scheduler** has no BullMQ equivalent: it is the core's
``Queue.pause_job_scheduler`` / ``resume_job_scheduler`` (one Lua transition each way,
docs/schedulers.md). A paused scheduler keeps its hash, leaves the ``repeat`` zset (so no
worker of any kind adds its runs) and is listed here from the queue's paused set. An upsert of
the same id from anywhere resumes it; ``runworker`` leaves a paused declared scheduler paused.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cron_descriptor import Options, get_description

from ..conf import get_config
from ..core.job import Job
from ..core.options import JobOptions
from ..core.queue import Queue
from ..core.scheduler import JobScheduler, template_options
from ..core.serialization import to_str
from . import display

#: Schedulers read per queue (ranks of ``repeat``, soonest first).
MAX_SCHEDULERS = 500
#: Newest ids of ``completed``, ``failed`` and ``active`` searched for runs of the schedulers.
HISTORY_WINDOW = 1000
#: Runs listed per scheduler, newest first.
HISTORY_SHOWN = 10

#: Stored ``opts`` keys a scheduler sets on each run itself (never part of a template).
_RUN_KEYS = ("jobId", "delay", "timestamp", "repeat", "prevMillis", "repeatJobKey")


@dataclass(frozen=True)
class Run:
    """One run of a scheduler still in Redis: job ``repeat:<id>:<due_ms>``.

    Attributes:
        job_id: the run's job id. due_ms: when it was due, ms since epoch.
        state: ``completed``, ``failed``, ``active`` or a pending state.
        finished_ms: ``finishedOn`` (ms) or None. failed_reason: its failure, "" without.
    """

    job_id: str
    due_ms: int
    state: str
    finished_ms: int | None = None
    failed_reason: str = ""


@dataclass
class Row:
    """One scheduler of the page.

    Attributes:
        queue: the queue's name. scheduler: as stored. paused: True when paused here.
        paused_ms: when it was paused (ms) or None. description: the schedule in words.
        declared: True when ``BULLQ["SCHEDULERS"]`` declares this id for this queue.
        over: True when it will add no more runs (its limit made, or its last run done).
        runs: its runs still in Redis, newest first (at most :data:`HISTORY_SHOWN`).
    """

    queue: str
    scheduler: JobScheduler
    paused: bool = False
    paused_ms: int | None = None
    description: str = ""
    declared: bool = False
    over: bool = False
    runs: list[Run] = field(default_factory=list)


def describe(scheduler: JobScheduler) -> str:
    """The schedule in words: ``"Every 5 minutes"`` for cron ``*/5 * * * *`` (cron-descriptor,
    24-hour clock, 6 fields read seconds first as cron-parser does), ``"every 5 min"`` for
    ``every`` 300000 (:func:`~django_bullq.admin.display.duration_text`); the raw pattern
    when cron-descriptor cannot read it (``@daily``-style aliases, ``L``)."""
    if scheduler.every:
        return f"every {display.duration_text(scheduler.every)}"
    if not scheduler.pattern:
        return "no schedule"
    return cron_text(scheduler.pattern)


def cron_text(pattern: str) -> str:
    """``pattern`` in English words (cron-descriptor), or the pattern when it cannot say."""
    options = Options()
    options.use_24hour_time_format = True
    options.throw_exception_on_parse_error = True
    try:
        return str(get_description(pattern, options))
    except Exception:  # noqa: BLE001 - cron-descriptor raises its own and plain errors
        return pattern


def declared_ids() -> set[tuple[str, str]]:
    """``(queue, id)`` of every ``BULLQ["SCHEDULERS"]`` entry (queue: its ``queue``, else
    the task's, else ``DEFAULT_QUEUE``)."""
    from ..producer.registry import registry

    cfg = get_config()
    found = set()
    for scheduler_id, entry in (cfg.get("SCHEDULERS") or {}).items():
        if not isinstance(entry, dict):
            continue
        queue = entry.get("queue")
        if not queue and entry.get("task"):
            task = registry.get(entry["task"]) if entry["task"] in registry.names() else None
            queue = getattr(task, "queue_name", None)
        found.add((str(queue or cfg["DEFAULT_QUEUE"]), str(scheduler_id)))
    return found


def rows(queue: Queue) -> list[Row]:
    """Every scheduler of ``queue``: the live ones soonest first (at most
    :data:`MAX_SCHEDULERS`), then the paused ones, each with its recent runs.

    A paused-set member whose hash is gone, or that is back in ``repeat`` (resumed by an
    upsert elsewhere), is not listed; the page writes nothing (resume, edit and remove drop
    the member).
    """
    declared = declared_ids()
    found = [
        Row(queue.name, s, declared=(queue.name, s.id) in declared)
        for s in queue.get_job_schedulers(0, MAX_SCHEDULERS - 1, asc=True)
    ]
    live = {r.scheduler.id for r in found}
    for scheduler in queue.get_paused_job_schedulers():
        if scheduler.id in live:
            continue  # upserted again meanwhile by a client that keeps the mark
        found.append(
            Row(
                queue.name,
                scheduler,
                paused=True,
                paused_ms=scheduler.paused_ms,
                declared=(queue.name, scheduler.id) in declared,
            )
        )
    runs = recent_runs(queue, [r.scheduler.id for r in found])
    for row in found:
        row.description = describe(row.scheduler)
        row.runs = runs.get(row.scheduler.id, [])
        row.over = not row.paused and _over(row.scheduler, row.runs)
    return found


def _over(scheduler: JobScheduler, runs: list[Run]) -> bool:
    """True when the scheduler will add no more runs: the run its score names has finished
    (no worker moves the score on once none is added), or it has made its ``limit`` of runs
    and none is pending."""
    due = {run.due_ms: run.state for run in runs}
    state = due.get(scheduler.next_millis) if scheduler.next_millis is not None else None
    if state in ("completed", "failed"):
        return True
    made = scheduler.iteration_count or 0
    pending = state not in (None, "completed", "failed", "active")
    return scheduler.limit is not None and made >= scheduler.limit and not pending


def recent_runs(queue: Queue, scheduler_ids: list[str]) -> dict[str, list[Run]]:
    """The runs of ``scheduler_ids`` still in Redis, newest first, per scheduler id.

    Bounded: the newest :data:`HISTORY_WINDOW` ids of ``completed``, ``failed`` and
    ``active`` (one pipeline), plus each scheduler's pending run; older runs of a busy queue
    are not found. Two more pipelines read ``finishedOn`` / ``failedReason`` of those shown.
    """
    wanted = set(scheduler_ids)
    if not wanted:
        return {}
    k = queue.keys
    pipe = queue.client.pipeline(transaction=False)
    pipe.zrevrange(k["completed"], 0, HISTORY_WINDOW - 1)
    pipe.zrevrange(k["failed"], 0, HISTORY_WINDOW - 1)
    pipe.lrange(k["active"], 0, HISTORY_WINDOW - 1)
    for scheduler_id in scheduler_ids:
        pipe.zscore(k["repeat"], scheduler_id)
    replies = pipe.execute()
    found: dict[str, dict[str, Run]] = {}
    for state, ids in zip(("completed", "failed", "active"), replies[:3], strict=True):
        for raw in ids:
            _add_run(found, wanted, str(to_str(raw)), state)
    pending = []
    for scheduler_id, score in zip(scheduler_ids, replies[3:], strict=True):
        if score is not None:
            pending.append(f"repeat:{scheduler_id}:{int(float(score))}")
    for job_id in pending:
        if not any(job_id in runs for runs in found.values()):
            _add_run(found, wanted, job_id, "")
    shown = {
        sid: sorted(runs.values(), key=lambda r: r.due_ms, reverse=True)[:HISTORY_SHOWN]
        for sid, runs in found.items()
    }
    return _details(queue, shown, wanted)


def _details(queue: Queue, shown: dict[str, list[Run]], wanted: set[str]) -> dict[str, list[Run]]:
    """``shown`` with each run's state (read for a pending run), ``finishedOn`` and failure;
    runs gone in the meantime are dropped."""
    every = [run for runs in shown.values() for run in runs]
    pipe = queue.client.pipeline(transaction=False)
    for run in every:
        pipe.hmget(queue.keys.job(run.job_id), "finishedOn", "failedReason")
    details = pipe.execute() if every else []
    states = [run.state or queue.get_job_state(run.job_id) for run in every]
    filled: dict[str, list[Run]] = {}
    for run, (finished, reason), state in zip(every, details, states, strict=True):
        split = _split_run_id(run.job_id, wanted)
        if state == "unknown" or split is None:
            continue  # the pending run was just taken, or removed
        filled.setdefault(split[0], []).append(
            Run(run.job_id, run.due_ms, state, _int(finished), str(to_str(reason or "")))
        )
    return filled


def _add_run(found: dict[str, dict[str, Run]], wanted: set[str], job_id: str, state: str) -> None:
    split = _split_run_id(job_id, wanted)
    if split is not None:
        found.setdefault(split[0], {})[job_id] = Run(job_id, split[1], state)


def _split_run_id(job_id: str, wanted: set[str]) -> tuple[str, int] | None:
    """``(scheduler id, due ms)`` of a run id ``repeat:<id>:<ms>`` of a wanted scheduler."""
    if not job_id.startswith("repeat:"):
        return None
    scheduler_id, _, millis = job_id[len("repeat:") :].rpartition(":")
    if scheduler_id not in wanted or not millis.isdigit():
        return None
    return scheduler_id, int(millis)


def _int(value: Any) -> int | None:
    try:
        return int(float(value))
    except (TypeError, ValueError):
        return None


# --- writes ---------------------------------------------------------------------------------


def options_from_stored(opts: dict[str, Any]) -> JobOptions:
    """:class:`JobOptions` of a template's stored ``opts`` (the core's
    :func:`~django_bullq.core.scheduler.template_options`).

    Raises:
        ValueError: ``opts`` is not a JSON object.
    """
    return template_options(opts)


def pause(queue: Queue, scheduler_id: str) -> str:
    """Pause scheduler ``scheduler_id`` (``Queue.pause_job_scheduler``); returns a summary.

    Raises:
        ValueError: no such scheduler, paused already, or its schedule is over.
    """
    removed = queue.pause_job_scheduler(scheduler_id)
    return f"paused; its next run ({removed}) removed" if removed else "paused"


def resume(queue: Queue, scheduler_id: str) -> str:
    """Resume a paused scheduler (``Queue.resume_job_scheduler``); returns a summary.

    Raises:
        ValueError: not paused, or the definition is refused by the upsert.
        BullqError: the upsert's script refused.
    """
    job = queue.resume_job_scheduler(scheduler_id)
    if job is None:
        return "not resumed: its schedule is over (end date passed or limit reached)"
    return f"resumed; next run {job.id}"


def run_now(queue: Queue, scheduler_id: str) -> Job:
    """Add one job now from the scheduler's template (name, data, options): an extra run with
    its own id, outside the schedule, which stays as it is (paused or not).

    Raises:
        ValueError: no such scheduler, or options the template's add refuses.
    """
    scheduler = queue.get_job_scheduler(scheduler_id)
    if scheduler is None:
        raise ValueError(f"no scheduler {scheduler_id!r}")
    return queue.add(scheduler.name, scheduler.data, template_options(scheduler.opts))


def remove(queue: Queue, scheduler_id: str) -> bool:
    """Remove a scheduler, paused or not, and its pending run; True when it existed."""
    return queue.remove_job_scheduler(scheduler_id)
