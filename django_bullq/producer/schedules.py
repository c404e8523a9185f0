"""Job schedulers declared in ``BULLQ["SCHEDULERS"]`` and the ``Task.schedule`` helper.

``runworker`` upserts every declared scheduler when it starts (idempotent: a pending iteration is
replaced, an ``every`` schedule keeps its slot alignment). Schedulers that are no longer declared
are **not** removed: they may have been created at run time or by another program (Node);
remove one with ``get_queue(name).remove_job_scheduler(id)``.
"""

from __future__ import annotations

import functools
import importlib
import logging
from typing import TYPE_CHECKING, Any, TypedDict

from ..conf import bullq_settings, get_queue
from ..core.clients import CLIENT_ERRORS
from ..core.errors import SchedulerIterationExists, SchedulerSlotsBusy
from ..core.scheduler import upsert_call
from ..exceptions import ConfigurationError
from .transaction import Pending, defer, waits_for_commit

if TYPE_CHECKING:
    from ..core.job import Job
    from .task import Task

logger = logging.getLogger("django_bullq.schedules")

#: Keys of one ``BULLQ["SCHEDULERS"][id]`` entry.
ENTRY_KEYS = (
    "queue",
    "task",
    "name",
    "every",
    "cron",
    "tz",
    "args",
    "kwargs",
    "data",
    "options",
    "limit",
    "start_date",
    "end_date",
)


def find_task(name: str) -> Task[..., Any] | None:
    """The registered task ``name``; imports its module (``module.qualname``) if needed."""
    from .registry import registry

    found = registry.get(name)
    if found is None and "." in name:
        try:
            importlib.import_module(name.rsplit(".", 1)[0])
        except ImportError:
            return None
        found = registry.get(name)
    return found


def task_template(
    task_: Task[..., Any], args: Any = (), kwargs: Any = None, options: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The scheduler template that calls ``task_`` with ``args``/``kwargs`` (raw: ``args[0]``).

    ``options`` are JobOptions fields over the task's own job options (``delay`` and ``job_id``
    are not allowed in a template; the task's own are left out).

    Raises:
        ValueError: ``delay`` or ``job_id`` in ``options``. TypeError: a call the function
            does not take. SerializationError: arguments that are not JSON.
    """
    refused = sorted({"delay", "job_id"} & set(options or {}))
    if refused:
        raise ValueError(
            f"options {refused} cannot be set in a scheduler template: the scheduler sets "
            "each run's id and time"
        )
    if task_.raw:
        args = list(args)
        if len(args) != 1 or kwargs:
            raise TypeError(f"raw task {task_.name!r} is scheduled with exactly one value")
        data: Any = args[0]
    else:
        data = {"args": list(args), "kwargs": dict(kwargs or {})}
        # each run is this call: refuse what enqueue would refuse (signature, JSON)
        task_._encoded(tuple(data["args"]), data["kwargs"])
    opts = {
        k: v
        for k, v in {**task_.job_options, **(options or {})}.items()
        if k not in ("delay", "job_id") and v is not None
    }
    return {"name": task_.name, "data": data, "opts": opts}


def entry_call(
    scheduler_id: str, entry: dict[str, Any]
) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """``(queue name, repeat, template)`` for one declared scheduler.

    Raises:
        ConfigurationError: not a dict, unknown key, unknown task, or neither / both of
            ``task`` and ``name``.
    """
    if not isinstance(entry, dict):
        raise ConfigurationError(f"BULLQ['SCHEDULERS'][{scheduler_id!r}] must be a dict")
    unknown = set(entry) - set(ENTRY_KEYS)
    if unknown:
        raise ConfigurationError(
            f"BULLQ['SCHEDULERS'][{scheduler_id!r}]: unknown key(s) "
            f"{sorted(unknown)}; known: {', '.join(ENTRY_KEYS)}"
        )
    if ("task" in entry) == ("name" in entry):
        raise ConfigurationError(
            f"BULLQ['SCHEDULERS'][{scheduler_id!r}]: give exactly one of "
            "'task' (a registered task name) or 'name' (a job name)"
        )
    repeat = {
        "every": entry.get("every"),
        "pattern": entry.get("cron"),
        "tz": entry.get("tz"),
        "limit": entry.get("limit"),
        "start_date": entry.get("start_date"),
        "end_date": entry.get("end_date"),
    }
    if "task" in entry:
        task_ = find_task(entry["task"])
        if task_ is None:
            raise ConfigurationError(
                f"BULLQ['SCHEDULERS'][{scheduler_id!r}]: no task registered as {entry['task']!r}"
            )
        template = task_template(
            task_, entry.get("args", ()), entry.get("kwargs"), entry.get("options")
        )
        queue = entry.get("queue") or task_.queue_name or bullq_settings.DEFAULT_QUEUE
    else:
        template = {
            "name": entry["name"],
            "data": entry.get("data", {}),
            "opts": dict(entry.get("options") or {}),
        }
        queue = entry.get("queue") or bullq_settings.DEFAULT_QUEUE
    return queue, {k: v for k, v in repeat.items() if v is not None}, template


def declared() -> dict[str, dict[str, Any]]:
    """``BULLQ["SCHEDULERS"]`` (``{}`` when unset)."""
    value = bullq_settings.SCHEDULERS
    if not isinstance(value, dict):
        raise ConfigurationError("BULLQ['SCHEDULERS'] must be a dict")
    return value


def upsert_declared() -> list[str]:
    """Upsert every scheduler of ``BULLQ["SCHEDULERS"]`` (called when ``runworker`` starts).

    Returns:
        The ids upserted. A scheduler an operator paused (``Queue.pause_job_scheduler``, the
        admin's Schedules page) is left paused, with its stored definition, and logged: a
        deploy does not undo the pause. A resume restores the definition stored when it was
        paused; a declaration changed meanwhile takes effect at the next start after it.
        A Redis error is logged and the rest skipped (the worker still starts; the next
        start upserts again). An upsert refused because the run it would
        add has started already (``SchedulerIterationExists`` / ``SchedulerSlotsBusy``, e.g.
        another host's clock is ahead) is logged and skipped: nothing of that scheduler was
        written, its chain of runs goes on.

    Raises:
        ConfigurationError: a malformed entry (the system check E010 reports it first).
    """
    done: list[str] = []
    for scheduler_id, entry in declared().items():
        queue, repeat, template = entry_call(scheduler_id, entry)
        try:
            if _paused(queue, scheduler_id):
                continue
            get_queue(queue).upsert_job_scheduler(scheduler_id, repeat, template)
        except (ValueError, TypeError) as exc:
            raise ConfigurationError(f"BULLQ['SCHEDULERS'][{scheduler_id!r}]: {exc}") from exc
        except (SchedulerIterationExists, SchedulerSlotsBusy) as exc:
            logger.warning(
                "job scheduler %s on queue %s left as it is: %s", scheduler_id, queue, exc
            )
            continue
        except CLIENT_ERRORS as exc:
            logger.error("could not upsert job scheduler %s: %s", scheduler_id, exc)
            break
        done.append(scheduler_id)
        logger.info("job scheduler %s upserted on queue %s", scheduler_id, queue)
    return done


def _paused(queue: str, scheduler_id: str) -> bool:
    """True (and logged) when the declared scheduler is paused in Redis."""
    scheduler = get_queue(queue).get_job_scheduler(scheduler_id)
    if scheduler is None or not scheduler.paused:
        return False
    logger.info(
        "job scheduler %s on queue %s is paused (Queue.pause_job_scheduler, or the admin's "
        "Schedules page): left paused, not upserted; a resume restores the definition it had "
        "when paused, and the next start after the resume applies this declaration",
        scheduler_id,
        queue,
    )
    return True


class ScheduleSpec(TypedDict, total=False):
    """The keywords of :meth:`Task.schedule` after the scheduler id.

    ``every``: ms between runs; or ``cron``: a cron pattern (6 fields = seconds first) read in
    ``tz`` (IANA name, default UTC). ``args`` / ``kwargs``: the call (raw tasks: one value).
    ``limit``, ``start_date`` / ``end_date`` (ms or aware datetime), ``immediately``,
    ``offset`` (ms): as in ``Queue.upsert_job_scheduler``.
    """

    every: int | None
    cron: str | None
    tz: str | None
    args: Any
    kwargs: Any
    limit: int | None
    start_date: Any
    end_date: Any
    immediately: bool | None
    offset: int | None


#: Keys of a :class:`ScheduleSpec` that are not repeat options.
CALL_KEYS = ("every", "cron", "tz", "args", "kwargs")


def schedule_call(
    task_: Task[..., Any], spec: ScheduleSpec
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(repeat, template)`` for :meth:`Task.schedule`.

    Raises:
        ValueError: neither or both of ``every`` and ``cron``.
        TypeError: a raw task not scheduled with exactly one value.
    """
    every, cron, tz = spec.get("every"), spec.get("cron"), spec.get("tz")
    if (every is None) == (cron is None):
        raise ValueError("give exactly one of every (ms) or cron")
    rep: dict[str, Any] = {"every": every} if every is not None else {"pattern": cron}
    if tz is not None:
        rep["tz"] = tz
    rep.update({k: v for k, v in spec.items() if k not in CALL_KEYS and v is not None})
    return rep, task_template(task_, spec.get("args", ()), spec.get("kwargs"))


def schedule(
    task_: Task[..., Any], scheduler_id: str, spec: ScheduleSpec
) -> Job | Pending[Job | None] | None:
    """Implementation of :meth:`Task.schedule`: now, or at the commit (the on-commit rule of
    :mod:`django_bullq.producer.transaction`, with the task's ``database`` / ``on_commit`` /
    ``outbox``)."""
    rep, template = schedule_call(task_, spec)
    queue = get_queue(task_.queue_name)
    if waits_for_commit(task_.database, on_commit=task_.on_commit):
        upsert_call(queue.keys, scheduler_id, rep, template, {})  # bad values raise here, not later

    def to_outbox() -> int:
        from .outbox import write_scheduler

        pk: int = write_scheduler(task_.database, queue.name, scheduler_id, rep, template).pk
        return pk

    return defer(
        functools.partial(queue.upsert_job_scheduler, scheduler_id, rep, template),
        to_outbox,
        Pending(f"job scheduler {scheduler_id!r} of queue {queue.name!r}"),
        database=task_.database,
        on_commit=task_.on_commit,
        outbox=task_.outbox,
    )


async def aschedule(
    task_: Task[..., Any], scheduler_id: str, spec: ScheduleSpec
) -> Job | Pending[Job | None] | None:
    """Implementation of :meth:`Task.aschedule`: a native async upsert, or as :func:`schedule`
    when it waits for the commit."""
    return (
        schedule(task_, scheduler_id, spec)
        if waits_for_commit(task_.database, on_commit=task_.on_commit)
        else await get_queue(task_.queue_name).aupsert_job_scheduler(
            scheduler_id, *schedule_call(task_, spec)
        )
    )
