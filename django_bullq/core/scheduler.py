"""Job schedulers (BullMQ "Job Schedulers", v6 repeatable jobs): upsert, read, remove, next run.

Layout (protocol reference §5.16): zset ``repeat`` (member = scheduler id, score = next run ms),
hash ``repeat:<id>`` (template and settings, ``ic`` = iteration count) and one pending iteration
job ``repeat:<id>:<ms>`` at a time. The next iteration is added when a worker *activates* the
current one (:func:`aschedule_next`), guarded in Lua so it happens once.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError

from . import calls
from .options import JobOptions, now_ms
from .serialization import dumps, loads, to_str

if TYPE_CHECKING:
    from .job import Job
    from .keys import QueueKeys
    from .queue import Queue
    from .scripts import Scripts

__all__ = ["JobScheduler", "JobSchedulerMixin", "aschedule_next", "next_cron_millis"]

logger = logging.getLogger("django_bullq.scheduler")
T = TypeVar("T")

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
#: Stored template opts a scheduler sets itself on each iteration.
_ITERATION_OPTS = ("jobId", "delay", "timestamp", "repeat", "prevMillis", "repeatJobKey")


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
        )


def _zone(tz: str | None) -> Any:
    if not tz:
        return UTC
    try:
        return ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ValueError(f"unknown time zone {tz!r}") from exc


#: cron-parser's predefined expressions (BullMQ takes them as patterns), as 5 / 6 fields.
_ALIASES = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@hourly": "0 * * * *",
    "@minutely": "* * * * *",
    "@secondly": "* * * * * *",
}
#: ``*`` in a day field stands for this range when it carries a step (``*/2``).
_DAY_RANGES = {3: "1-31", 5: "0-6"}  # index in the 6-field form: day of month, day of week


@dataclass(frozen=True, slots=True)
class _Cron:
    """A cron-parser pattern spelled for ``cronsim``.

    Attributes:
        expr: cronsim expression (5 fields, or 6 with seconds first).
        second: s added to each time of ``expr``: a 6-field pattern whose seconds field is one
            number is run as its 5-field form shifted by that many seconds, so that it gets
            the wall-clock handling of DST transitions that cronsim gives 5-field patterns.
    """

    expr: str
    second: int


def _day_field(value: str, index: int) -> str:
    """A day field in cronsim's dialect with cron-parser's meaning: ``?`` is ``*``; ``*/n`` is a
    restriction (so days of month and of week are OR-ed), written as a range for cronsim."""
    if value == "?":
        return "*"
    if "LW" in value.upper():  # cronsim has it, cron-parser refuses it
        raise ValueError("LW")
    return ",".join(
        _DAY_RANGES[index] + item[1:] if item.startswith("*") and item != "*" else item
        for item in value.split(",")
    )


def _parse_cron(pattern: str) -> _Cron:
    """The cronsim form of a cron-parser pattern. Raises ValueError when invalid."""
    fields = (
        _ALIASES.get(pattern.strip().lower(), pattern).split() if isinstance(pattern, str) else []
    )
    try:
        if len(fields) not in (5, 6):
            raise ValueError("wrong number of fields")
        full = fields if len(fields) == 6 else ["0", *fields]
        full = [_day_field(v, i) if i in _DAY_RANGES else v for i, v in enumerate(full)]
        second = int(full[0]) if full[0].isdigit() and int(full[0]) < 60 else None
        cron = _Cron(" ".join(full[1:]), second) if second is not None else _Cron(" ".join(full), 0)
        CronSim(cron.expr, datetime(2000, 1, 1, tzinfo=UTC))  # parses the fields
    except (ValueError, CronSimError) as exc:
        raise ValueError(
            f"invalid cron pattern {pattern!r} (5 fields, or 6 with seconds first)"
        ) from exc
    return cron


def validate_cron(pattern: str, tz: str | None = None) -> None:
    """Raise ValueError unless ``pattern`` is a valid cron-parser pattern and ``tz`` a zone.

    cron-parser's syntax, which BullMQ uses: ``min hour dom month dow``, or
    ``sec min hour dom month dow`` with 6 fields; names (``MON``, ``JAN``), ``?``, ``L``,
    ``5L`` and ``FRI#2``; the ``@daily``-style aliases. Not ``H`` nor ``LW``.
    """
    _parse_cron(pattern)
    _zone(tz)


def next_cron_millis(
    pattern: str,
    after_ms: int,
    tz: str | None = None,
    start_date: int | None = None,
    end_date: int | None = None,
) -> int | None:
    """Next occurrence of a cron pattern strictly after ``max(after_ms, start_date)``.

    Reads the pattern as cron-parser (BullMQ's) does: 6 fields mean seconds first; days of
    month and of week are OR-ed when both are restricted; wall-clock times are read in ``tz``
    (UTC when None). Computed with ``cronsim``; across DST transitions (docs/schedulers.md):

    * a pattern with a fixed minute and hour (daily, weekly, ...) runs once at a wall-clock
      time that occurs twice (fall-back), at its first instant; a time that does not exist
      (spring-forward) runs once, at the first valid time after the gap;
    * a pattern with ``*`` in its minute or hour field (hourly, every N minutes) follows
      elapsed time: it runs in both passes of a repeated hour and never inside a gap.

    Args:
        pattern: cron pattern. after_ms / start_date / end_date: ms since epoch.
        tz: IANA time zone name, e.g. ``"Europe/Paris"``.

    Returns:
        ms since epoch, always > ``after_ms``; None when the next occurrence is after
        ``end_date`` (or there is none within 50 years).

    Raises:
        ValueError: invalid pattern or time zone.
    """
    cron = _parse_cron(pattern)
    zone = _zone(tz)
    base = max(after_ms, start_date or 0)
    shift_ms = cron.second * 1000
    # cronsim starts from whole seconds and answers times after the start second
    start = datetime.fromtimestamp((base - shift_ms) // 1000, tz=zone)
    millis: int | None = None
    for when in CronSim(cron.expr, start):
        candidate = int(when.timestamp()) * 1000 + shift_ms
        # Started inside a repeated hour, cronsim answers the first instant of that wall-clock
        # time, which has passed: that time has had its run, take the next one.
        if candidate > base:
            millis = candidate
            break
    if millis is None or (end_date is not None and millis > end_date):
        return None
    return millis


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
    options = opts if isinstance(opts, JobOptions) else JobOptions(**opts)
    if options.job_id is not None or options.delay:
        raise ValueError("a scheduler template cannot set job_id or delay (the scheduler does)")
    options.validate()
    stored = options.to_stored(0)
    if not options.attempts:
        stored.pop("attempts", None)
    for key in _ITERATION_OPTS:
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
    if immediately and start is not None:
        raise ValueError("immediately and start_date exclude each other")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ValueError("limit must be an int >= 1")
    if start is not None and end is not None and start > end:
        raise ValueError("start_date is after end_date")
    first: int | str = ""
    following: int | str = ""
    if every is not None:
        if isinstance(every, bool) or not isinstance(every, int) or every < 1:
            raise ValueError("every must be an int >= 1 (ms)")
        if tz is not None:
            _zone(tz)
        if offset is not None and (not isinstance(offset, int) or offset < 0):
            raise ValueError("offset must be an int >= 0 (ms)")
    else:
        validate_cron(pattern, tz)
        nxt = now if immediately else next_cron_millis(pattern, now, tz, start, end)
        if nxt is not None:
            first = nxt
            after = next_cron_millis(pattern, nxt, tz, start, end)
            following = "" if after is None else after
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


def _end_reached(repeat: dict[str, Any], first: Any, now: int) -> bool:
    end = _ms(repeat.get("end_date", repeat.get("endDate")), "end_date")
    return (end is not None and now > end) or (
        (repeat.get("pattern") or repeat.get("cron")) is not None and first == ""
    )


class JobSchedulerMixin:
    """Job scheduler methods of :class:`~django_bullq.core.queue.queue.Queue` (BullMQ's
    ``JobScheduler``)."""

    if TYPE_CHECKING:  # what the methods use of Queue, which defines them
        keys: QueueKeys

        @property
        def client(self) -> Any: ...

        @property
        def aclient(self) -> Any: ...

        @property
        def scripts(self) -> Scripts: ...

        @property
        def ascripts(self) -> Scripts: ...

        def _run(self, call: calls.Call[T]) -> T: ...

        async def _arun(self, call: calls.Call[T]) -> T: ...

        def get_job(self, job_id: str, required: bool = False) -> Job | None: ...

        async def aget_job(self, job_id: str, required: bool = False) -> Job | None: ...

    def _upsert_call(
        self,
        scheduler_id: str,
        repeat: dict[str, Any],
        template: dict[str, Any] | None,
        extra: dict[str, Any],
    ) -> calls.Call[Any] | None:
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
            self.keys,
            scheduler_id=scheduler_id,
            now=now,
            name=name,
            data=data_text,
            opts=dumps(opts) if opts else "",
            **rep,
        )

    def upsert_job_scheduler(
        self,
        scheduler_id: str,
        repeat: dict[str, Any],
        template: dict[str, Any] | None = None,
        *,
        limit: int | None = None,
        start_date: Any = None,
        end_date: Any = None,
        immediately: bool | None = None,
    ) -> Job | None:
        """Create or replace a job scheduler (BullMQ ``Queue.upsertJobScheduler``).

        Atomic: however many processes upsert one id at once, one scheduler record and exactly
        one pending iteration remain. A pending (not started) iteration of an earlier upsert is
        replaced; an ``every`` schedule keeps its slot alignment (``offset``) across upserts.

        Args:
            scheduler_id: the scheduler id; iterations get job ids ``repeat:<id>:<ms>``.
            repeat: ``{"every": ms}`` or ``{"pattern": cron, "tz": "Europe/Paris"}`` (cron as
                cron-parser reads it: 5 fields, or 6 with seconds first; ``tz`` default UTC);
                may also hold ``offset`` (ms) and the keyword options below.
            template: ``{"name": str (default the id), "data": JSON value, "opts": JobOptions
                or a dict of JobOptions fields (no job_id / delay)}``.
            limit: max number of iterations. start_date / end_date: ms since epoch or aware
                datetimes. immediately: cron only, first run now instead of the next tick.

        Returns:
            The pending iteration :class:`Job`, or None (nothing is written) when
            ``end_date`` has passed, the pattern has no occurrence before it, or the
            scheduler exists and has already created ``limit`` iterations, none pending.

        Raises:
            ValueError: bad options.
            TypeError: a template name that is not a string.
            SerializationError: data not JSON.
            SchedulerIterationExists: (Lua code -10) cron, the iteration at that time has
                started.
            SchedulerSlotsBusy: (Lua code -11) every, 32 slots hold started iterations.
        """
        call = self._upsert_call(
            scheduler_id,
            repeat,
            template,
            {
                "limit": limit,
                "start_date": start_date,
                "end_date": end_date,
                "immediately": immediately,
            },
        )
        if call is None:
            return None
        reply = self._run(call)
        if not isinstance(reply, list):
            return None  # limit reached, nothing pending: the schedule stays over
        return self.get_job(str(to_str(reply[0])))

    async def aupsert_job_scheduler(
        self,
        scheduler_id: str,
        repeat: dict[str, Any],
        template: dict[str, Any] | None = None,
        *,
        limit: int | None = None,
        start_date: Any = None,
        end_date: Any = None,
        immediately: bool | None = None,
    ) -> Job | None:
        """Async twin of :meth:`upsert_job_scheduler`."""
        call = self._upsert_call(
            scheduler_id,
            repeat,
            template,
            {
                "limit": limit,
                "start_date": start_date,
                "end_date": end_date,
                "immediately": immediately,
            },
        )
        if call is None:
            return None
        reply = await self._arun(call)
        if not isinstance(reply, list):
            return None  # limit reached, nothing pending: the schedule stays over
        return await self.aget_job(str(to_str(reply[0])))

    def get_job_scheduler(self, scheduler_id: str) -> JobScheduler | None:
        """The scheduler ``scheduler_id``, or None (BullMQ ``getJobScheduler``)."""
        pipe = self.client.pipeline(transaction=True)
        pipe.hgetall(self.keys[f"repeat:{scheduler_id}"])
        pipe.zscore(self.keys["repeat"], scheduler_id)
        raw, score = pipe.execute()
        return JobScheduler.from_hash(scheduler_id, raw, score) if raw else None

    async def aget_job_scheduler(self, scheduler_id: str) -> JobScheduler | None:
        """Async twin of :meth:`get_job_scheduler`."""
        pipe = self.aclient.pipeline(transaction=True)
        pipe.hgetall(self.keys[f"repeat:{scheduler_id}"])
        pipe.zscore(self.keys["repeat"], scheduler_id)
        raw, score = await pipe.execute()
        return JobScheduler.from_hash(scheduler_id, raw, score) if raw else None

    def _schedulers(self, entries: list[Any], raws: list[Any]) -> list[JobScheduler]:
        return [
            JobScheduler.from_hash(str(to_str(member)), raw, score)
            for (member, score), raw in zip(entries, raws, strict=True)
            if raw
        ]

    def get_job_schedulers(
        self, start: int = 0, end: int = -1, asc: bool = False
    ) -> list[JobScheduler]:
        """Schedulers ordered by next run (latest first unless ``asc``; BullMQ
        ``getJobSchedulers``). ``start``/``end`` are inclusive ranks; entries without a hash
        (legacy v5 repeatables) are skipped."""
        key = self.keys["repeat"]
        entries = (
            self.client.zrange(key, start, end, withscores=True)
            if asc
            else self.client.zrevrange(key, start, end, withscores=True)
        )
        pipe = self.client.pipeline(transaction=False)
        for member, _ in entries:
            pipe.hgetall(self.keys[f"repeat:{to_str(member)}"])
        return self._schedulers(entries, pipe.execute() if entries else [])

    async def aget_job_schedulers(
        self, start: int = 0, end: int = -1, asc: bool = False
    ) -> list[JobScheduler]:
        """Async twin of :meth:`get_job_schedulers`."""
        key = self.keys["repeat"]
        client = self.aclient
        entries = (
            await client.zrange(key, start, end, withscores=True)
            if asc
            else await client.zrevrange(key, start, end, withscores=True)
        )
        pipe = client.pipeline(transaction=False)
        for member, _ in entries:
            pipe.hgetall(self.keys[f"repeat:{to_str(member)}"])
        return self._schedulers(entries, await pipe.execute() if entries else [])

    def get_job_schedulers_count(self) -> int:
        """Number of schedulers (``ZCARD repeat``; BullMQ ``getJobSchedulersCount``)."""
        return int(self.client.zcard(self.keys["repeat"]))

    async def aget_job_schedulers_count(self) -> int:
        """Async twin of :meth:`get_job_schedulers_count`."""
        return int(await self.aclient.zcard(self.keys["repeat"]))

    def remove_job_scheduler(self, scheduler_id: str) -> bool:
        """Remove a scheduler and its not-yet-started iteration (BullMQ ``removeJobScheduler``).

        Returns:
            True if it existed. A running iteration finishes; no next one is added.
        """
        return self._run(calls.remove_job_scheduler(self.keys, scheduler_id=scheduler_id))

    async def aremove_job_scheduler(self, scheduler_id: str) -> bool:
        """Async twin of :meth:`remove_job_scheduler`."""
        return await self._arun(calls.remove_job_scheduler(self.keys, scheduler_id=scheduler_id))


def _next_call(queue: Queue, job: Job) -> calls.Call[Any]:
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
    except Exception:  # noqa: BLE001 - a scheduling error must not fail the running job
        logger.exception(
            "queue %s: could not schedule the next iteration after job %s", queue.name, job.id
        )
        return None
