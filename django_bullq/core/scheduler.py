"""Job schedulers (BullMQ "Job Schedulers", v6 repeatable jobs): the stored scheduler, the
validation of a schedule and its upsert call, the next iteration.

The queue methods (``Queue.upsert_job_scheduler`` ...) are in
:mod:`django_bullq.core.queue.schedulers`; cron patterns in :mod:`django_bullq.core.cron`, whose
:func:`next_cron_millis` and :func:`validate_cron` this module re-exports.

Layout (protocol reference §5.16): zset ``repeat`` (member = scheduler id, score = next run ms),
hash ``repeat:<id>`` (template and settings, ``ic`` = iteration count) and one pending iteration
job ``repeat:<id>:<ms>`` at a time. The next iteration is added when a worker *activates* the
current one (:func:`aschedule_next`), guarded in Lua so it happens once.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import TYPE_CHECKING, Any

from . import calls
from .calls import Call
from .cron import _zone, next_cron_millis, validate_cron
from .options import FROM_STORED, JobOptions, now_ms
from .serialization import dumps, loads, to_str

if TYPE_CHECKING:
    from .job import Job
    from .keys import QueueKeys
    from .queue import Queue

__all__ = [
    "ITERATION_OPTS",
    "PAUSED_FIELD",
    "PAUSED_SCHEDULERS",
    "JobScheduler",
    "aschedule_next",
    "next_cron_millis",
    "template_options",
    "upsert_call",
    "validate_cron",
]

#: Field of ``repeat:<id>`` that marks a paused scheduler (its value: ms when it was paused);
#: written by ``pauseJobScheduler``, dropped by the upsert that resumes it. Not BullMQ's.
PAUSED_FIELD = "bullqPaused"
#: Key suffix of the queue's set of paused scheduler ids (``<prefix>:<queue>:`` + this).
PAUSED_SCHEDULERS = "bullq:paused-schedulers"

logger = logging.getLogger("django_bullq.scheduler")

_REPEAT_KEYS = {
    "every",
    "pattern",
    "cron",
    "tz",
    "offset",
    "limit",
    "start_date",
    "end_date",
    "immediately",
    "startDate",
    "endDate",
}
#: Longest ``every`` (ms): 100 years. Run times (now + every) must stay integers that Lua
#: writes in full in run ids ``repeat:<id>:<ms>`` (it writes 1e14 and above as floats).
MAX_EVERY_MS = 100 * 365 * 24 * 3600 * 1000
#: Stored template opts a scheduler sets itself on each iteration.
ITERATION_OPTS = ("jobId", "delay", "timestamp", "repeat", "prevMillis", "repeatJobKey")
#: Stored template opts -> :class:`JobOptions` attribute (a template has no parent).
_TEMPLATE_OPTS = {
    **{k: v for k, v in FROM_STORED.items() if k not in ITERATION_OPTS},
    "de": "deduplication",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class JobScheduler:
    """A scheduler as stored in ``repeat:<id>`` (BullMQ ``JobSchedulerJson``).

    Attributes:
        id: scheduler id [key]. name: template job name. next_millis: next run, ms [next].
        iteration_count: iterations created so far [iterationCount, field ``ic``].
        every: ms, or None. pattern: cron pattern, or None. tz: IANA zone, or None.
        limit: max iterations, or None. start_date / end_date: ms, or None.
        offset: ms alignment of ``every`` slots, or None.
        data: template data (JSON value). opts: template opts (BullMQ names, stored form).
        paused_ms: when it was paused (ms since epoch; ``Queue.pause_job_scheduler``), or
            None when it is not paused (no BullMQ equivalent).
    """

    id: str
    name: str
    next_millis: int | None
    iteration_count: int | None = None
    every: int | None = None
    pattern: str | None = None
    tz: str | None = None
    limit: int | None = None
    start_date: int | None = None
    end_date: int | None = None
    offset: int | None = None
    data: Any = None
    opts: dict[str, Any] = field(default_factory=dict)
    paused_ms: int | None = None

    @property
    def paused(self) -> bool:
        """True when the scheduler is paused (it then has no next run)."""
        return self.paused_ms is not None

    def repeat_options(self) -> dict[str, Any]:
        """The ``repeat`` argument of ``Queue.upsert_job_scheduler`` that recreates this
        scheduler (``every`` or ``pattern`` with ``tz``, ``limit``, ``start_date``,
        ``end_date``); its stored ``offset`` is kept by the upsert itself."""
        repeat: dict[str, Any] = {"every": self.every} if self.every else {"pattern": self.pattern}
        if self.tz:
            repeat["tz"] = self.tz
        for key, value in (
            ("limit", self.limit),
            ("start_date", self.start_date),
            ("end_date", self.end_date),
        ):
            if value is not None:
                repeat[key] = value
        return repeat

    def template(self) -> dict[str, Any]:
        """The ``template`` argument of ``Queue.upsert_job_scheduler`` that recreates this
        scheduler: ``{"name", "data", "opts": JobOptions}``."""
        return {"name": self.name, "data": self.data, "opts": template_options(self.opts)}

    @classmethod
    def from_hash(cls, scheduler_id: str, raw: dict[Any, Any], score: Any) -> JobScheduler:
        """Build from the raw ``repeat:<id>`` hash and the ``repeat`` zset score."""
        h = {to_str(k): to_str(v) for k, v in raw.items()}

        def num(name: str) -> int | None:
            value = h.get(name)
            return int(float(value)) if value not in (None, "") else None

        return cls(
            id=scheduler_id,
            name=h.get("name") or "",
            next_millis=int(float(score)) if score is not None else None,
            iteration_count=num("ic"),
            every=num("every"),
            pattern=h.get("pattern"),
            tz=h.get("tz"),
            limit=num("limit"),
            start_date=num("startDate"),
            end_date=num("endDate"),
            offset=num("offset"),
            data=loads(h["data"]) if h.get("data") else {},
            opts=loads(h["opts"]) if h.get("opts") else {},
            paused_ms=_paused_at(h),
        )


def _paused_at(fields: dict[Any, Any]) -> int | None:
    """``bullqPaused`` of a scheduler hash as ms; 0 for a mark that is not a number."""
    if PAUSED_FIELD not in fields:
        return None
    try:
        return int(float(fields[PAUSED_FIELD]))
    except (TypeError, ValueError):
        return 0


def template_options(opts: dict[str, Any]) -> JobOptions:
    """:class:`JobOptions` of a scheduler template's stored ``opts`` (BullMQ names:
    ``attempts``, ``backoff``, ``removeOnComplete``, ``kl`` ...). The keys a scheduler sets on
    each run (``jobId``, ``delay``, ``repeat`` ...) are dropped; unknown keys go to ``extra``.

    Values are taken as they are, for :meth:`JobOptions.validate` (the upsert's) to judge:
    this reads what an operator typed as well as what was stored.

    Raises:
        ValueError: ``opts`` is not a JSON object.
    """
    if not isinstance(opts, dict):
        raise ValueError("options must be a JSON object")
    known: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for key, value in opts.items():
        if key in ITERATION_OPTS:
            continue
        if key in _TEMPLATE_OPTS:
            known[_TEMPLATE_OPTS[key]] = value
        else:
            extra[key] = value
    return JobOptions(extra=extra, **known)


def _ms(value: Any, what: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValueError(f"{what}: a naive datetime is ambiguous: pass an aware datetime")
        return int(round(value.timestamp() * 1000))
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{what} must be ms since epoch (int >= 0) or an aware datetime")
    return value


def _template_opts(opts: JobOptions | dict[str, Any] | None) -> dict[str, Any]:
    if opts is None:
        return {}
    if isinstance(opts, JobOptions):
        options = opts
    else:
        unknown = sorted(set(opts) - {f.name for f in fields(JobOptions)})
        if unknown:
            raise ValueError(f"unknown job option(s) {unknown} in the template")
        options = JobOptions(**opts)
    if options.job_id is not None or options.delay:
        raise ValueError("a scheduler template cannot set job_id or delay (the scheduler does)")
    options.validate()
    stored = options.to_stored(0)
    if not options.attempts:
        stored.pop("attempts", None)
    for key in ITERATION_OPTS:
        stored.pop(key, None)
    return stored


def _repeat_args(scheduler_id: str, repeat: dict[str, Any], now: int) -> dict[str, Any]:
    """addJobScheduler's repeat arguments (``next_millis``, ``every`` .. ``following_millis``,
    as :func:`~django_bullq.core.calls.add_job_scheduler` names them): validates everything."""
    unknown = set(repeat) - _REPEAT_KEYS
    if unknown:
        raise ValueError(f"unknown repeat option(s) {sorted(unknown)}")
    every = repeat.get("every")
    pattern: Any = repeat.get("pattern") or repeat.get("cron")  # checked by validate_cron
    if (every is None) == (pattern is None):
        raise ValueError(f"scheduler {scheduler_id!r}: give exactly one of every (ms) or pattern")
    tz = repeat.get("tz")
    start = _ms(repeat.get("start_date", repeat.get("startDate")), "start_date")
    end = _ms(repeat.get("end_date", repeat.get("endDate")), "end_date")
    limit = repeat.get("limit")
    offset = repeat.get("offset")
    immediately = bool(repeat.get("immediately"))
    _check_window(start, end, limit, immediately=immediately)
    first: int | str = ""
    following: int | str = ""
    if every is not None:
        _check_every(every, tz, offset)
    else:
        validate_cron(pattern, tz)
        first, following = _cron_runs(pattern, tz, now, start, end, immediately=immediately)
    return {
        "next_millis": first,
        "every": every or "",
        "pattern": pattern or "",
        "tz": tz or "",
        "limit": limit or "",
        "start_date": start or "",
        "end_date": end or "",
        "offset": "" if offset is None else offset,
        "following_millis": following,
    }


def _check_window(start: int | None, end: int | None, limit: Any, *, immediately: bool) -> None:
    if immediately and start is not None:
        raise ValueError("immediately and start_date exclude each other")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ValueError("limit must be an int >= 1")
    if start is not None and end is not None and start > end:
        raise ValueError("start_date is after end_date")


def _check_every(every: Any, tz: Any, offset: Any) -> None:
    if isinstance(every, bool) or not isinstance(every, int) or not 1 <= every <= MAX_EVERY_MS:
        raise ValueError(f"every must be an int from 1 to {MAX_EVERY_MS:_} (ms, 100 years)")
    if tz is not None:
        _zone(tz)
    if offset is not None and (not isinstance(offset, int) or offset < 0):
        raise ValueError("offset must be an int >= 0 (ms)")


def _cron_runs(
    pattern: str, tz: Any, now: int, start: int | None, end: int | None, *, immediately: bool
) -> tuple[int | str, int | str]:
    """The first run (ms, ``""`` when the window is over) and the one after it of a cron
    scheduler (``immediately``: the first is now)."""
    first = now if immediately else next_cron_millis(pattern, now, tz, start, end)
    if first is None:
        return "", ""
    after = next_cron_millis(pattern, first, tz, start, end)
    return first, "" if after is None else after


def _end_reached(repeat: dict[str, Any], first: Any, now: int) -> bool:
    end = _ms(repeat.get("end_date", repeat.get("endDate")), "end_date")
    return (end is not None and now > end) or (
        (repeat.get("pattern") or repeat.get("cron")) is not None and first == ""
    )


def upsert_call(
    keys: QueueKeys,
    scheduler_id: str,
    repeat: dict[str, Any],
    template: dict[str, Any] | None,
    extra: dict[str, Any],
) -> Call[Any] | None:
    """The ``addJobScheduler`` call of an upsert (see
    :meth:`~django_bullq.core.queue.schedulers.JobSchedulers.upsert_job_scheduler`), or None
    when the schedule is already over. Validates everything first.

    Raises:
        ValueError: bad id, repeat options or template. TypeError: a template name that is not
            a string. SerializationError: data not JSON.
    """
    if not isinstance(scheduler_id, str) or not scheduler_id:
        raise ValueError("scheduler id must be a non-empty string")
    repeat = {**repeat, **{k: v for k, v in extra.items() if v is not None}}
    template = dict(template or {})
    unknown = set(template) - {"name", "data", "opts"}
    if unknown:
        raise ValueError(f"unknown template key(s) {sorted(unknown)}")
    name = template.get("name", scheduler_id)
    if not isinstance(name, str):
        raise TypeError("template name must be a string")
    now = now_ms()
    rep = _repeat_args(scheduler_id, repeat, now)
    if _end_reached(repeat, rep["next_millis"], now):
        return None
    data = template.get("data")
    data_text = dumps({} if data is None else data, f"data of scheduler {scheduler_id!r}")
    opts = _template_opts(template.get("opts"))
    return calls.add_job_scheduler(
        keys,
        scheduler_id=scheduler_id,
        now=now,
        name=name,
        data=data_text,
        opts=dumps(opts) if opts else "",
        **rep,
    )


def _next_call(queue: Queue, job: Job) -> Call[Any]:
    repeat = job.opts.get("repeat")
    rep: dict[str, Any] = repeat if isinstance(repeat, dict) else {}
    now = now_ms()
    nxt: int | None | str = ""
    pattern = rep.get("pattern")
    if pattern and not rep.get("every"):
        prev = job.opts.get("prevMillis") or 0
        after = max(now, int(prev)) if isinstance(prev, int | float) else now
        nxt = next_cron_millis(
            pattern, after, rep.get("tz"), rep.get("startDate"), rep.get("endDate")
        )
    return calls.update_job_scheduler(
        queue.keys,
        scheduler_id=job.repeat_job_key or "",
        producer_id=job.id,
        now=now,
        next_millis="" if nxt is None else nxt,
    )


async def aschedule_next(queue: Queue, job: Job) -> Any:
    """Add the next iteration of the scheduler that produced ``job``, as a BullMQ worker does
    when it activates an iteration (one ``updateJobScheduler`` call; guarded in Lua).

    Returns the script's answer (next job id, or 0 / 1 / 2), or None when ``job`` has no
    ``rjk`` or the call failed (logged: the job itself still runs).
    """
    if not job.repeat_job_key:
        return None
    try:
        return await queue._arun(_next_call(queue, job))
    except Exception:
        logger.exception(
            "queue %s: could not schedule the next iteration after job %s", queue.name, job.id
        )
        return None
