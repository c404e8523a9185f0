"""Job schedulers of a queue: upsert, read, remove (BullMQ's ``JobScheduler`` class), and
pause / resume one scheduler (ours: docs/schedulers.md, "Pausing one scheduler").

The schedule itself (validation, the next run, the stored form) is in
:mod:`django_bullq.core.scheduler`; cron patterns in :mod:`django_bullq.core.cron`.
"""

from __future__ import annotations

from typing import Any, TypedDict, Unpack

from .. import calls
from ..calls import Command, Read, Steps
from ..job import Job
from ..options import now_ms
from ..scheduler import PAUSED_SCHEDULERS, JobScheduler, upsert_call
from ..serialization import to_str
from .base import QueueBase


class SchedulerOptions(TypedDict, total=False):
    """Keyword options of :meth:`JobSchedulers.upsert_job_scheduler` (BullMQ's
    ``RepeatOptions`` fields of the same names; None or absent: not set).

    Attributes:
        limit: max number of iterations (BullMQ ``limit``).
        start_date / end_date: ms since epoch or aware datetimes (``startDate`` /
            ``endDate``).
        immediately: cron only: the first run now instead of at the next tick.
    """

    limit: int | None
    start_date: Any
    end_date: Any
    immediately: bool | None


#: Refusals of ``pauseJobScheduler`` by its reply code.
_NOT_PAUSED = {
    0: "no job scheduler {!r}",
    2: "job scheduler {!r} is paused already",
    3: "job scheduler {!r} has no next run to pause (its schedule is over)",
}


def _iteration_id(reply: Any) -> str | None:
    """The pending iteration's job id from an ``addJobScheduler`` reply, or None when the
    limit is reached and nothing is pending (the schedule stays over)."""
    return str(to_str(reply[0])) if isinstance(reply, list) else None


class JobSchedulers(QueueBase):
    """Job scheduler methods of :class:`~django_bullq.core.queue.queue.Queue` (BullMQ's
    ``JobScheduler``; our :class:`~django_bullq.core.scheduler.JobScheduler` is the stored
    scheduler, BullMQ's ``JobSchedulerJson``)."""

    def upsert_job_scheduler(
        self,
        scheduler_id: str,
        repeat: dict[str, Any],
        template: dict[str, Any] | None = None,
        **options: Unpack[SchedulerOptions],
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
            options: the keyword options of :class:`SchedulerOptions` (``limit``,
                ``start_date``, ``end_date``, ``immediately``); each may also be in ``repeat``.

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
        return self._drive(self._upsert(scheduler_id, repeat, template, options))

    async def aupsert_job_scheduler(
        self,
        scheduler_id: str,
        repeat: dict[str, Any],
        template: dict[str, Any] | None = None,
        **options: Unpack[SchedulerOptions],
    ) -> Job | None:
        """Async twin of :meth:`upsert_job_scheduler`."""
        return await self._adrive(self._upsert(scheduler_id, repeat, template, options))

    def _upsert(
        self,
        scheduler_id: str,
        repeat: dict[str, Any],
        template: dict[str, Any] | None,
        options: SchedulerOptions,
    ) -> Steps[Job | None]:
        """The upsert's call (none when the schedule is over), then its pending iteration."""
        call = upsert_call(self.keys, scheduler_id, repeat, template, dict(options))
        job_id = None if call is None else _iteration_id((yield call))
        job: Job | None = None if job_id is None else (yield self._job_read(job_id))
        return job

    def get_job_scheduler(self, scheduler_id: str) -> JobScheduler | None:
        """The scheduler ``scheduler_id``, or None (BullMQ ``getJobScheduler``)."""
        return self._read(self._scheduler_read(scheduler_id))

    async def aget_job_scheduler(self, scheduler_id: str) -> JobScheduler | None:
        """Async twin of :meth:`get_job_scheduler`."""
        return await self._aread(self._scheduler_read(scheduler_id))

    def _scheduler_read(self, scheduler_id: str) -> Read[JobScheduler | None]:
        commands = (
            ("HGETALL", self.keys[f"repeat:{scheduler_id}"]),
            ("ZSCORE", self.keys["repeat"], scheduler_id),
        )

        def scheduler(replies: list[Any]) -> JobScheduler | None:
            raw, score = replies
            return JobScheduler.from_hash(scheduler_id, raw, score) if raw else None

        return Read(commands, scheduler)

    def get_job_schedulers(
        self, start: int = 0, end: int = -1, *, asc: bool = False
    ) -> list[JobScheduler]:
        """Schedulers ordered by next run (latest first unless ``asc``; BullMQ
        ``getJobSchedulers``). ``start``/``end`` are inclusive ranks; entries without a hash
        (legacy v5 repeatables) are skipped."""
        return self._drive(self._schedulers(start, end, asc=asc))

    async def aget_job_schedulers(
        self, start: int = 0, end: int = -1, *, asc: bool = False
    ) -> list[JobScheduler]:
        """Async twin of :meth:`get_job_schedulers`."""
        return await self._adrive(self._schedulers(start, end, asc=asc))

    def _schedulers(self, start: int, end: int, *, asc: bool) -> Steps[list[JobScheduler]]:
        """The ranks ``start``..``end`` of ``repeat`` with their scores, then their hashes."""
        method = "zrange" if asc else "zrevrange"
        entries: list[Any] = yield Command(
            method, (self.keys["repeat"], start, end), {"withscores": True}
        )
        hashes = tuple(("HGETALL", self.keys[f"repeat:{to_str(m)}"]) for m, _ in entries)
        raws: list[Any] = (yield Read(hashes, list, transaction=False)) if entries else []
        return [
            JobScheduler.from_hash(str(to_str(member)), raw, score)
            for (member, score), raw in zip(entries, raws, strict=True)
            if raw
        ]

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

    # --- pausing one scheduler (no BullMQ equivalent) --------------------------------------

    def pause_job_scheduler(self, scheduler_id: str) -> str | None:
        """Pause a scheduler: no run of it is added until :meth:`resume_job_scheduler` (or an
        upsert of its id from anywhere). One atomic step (``pauseJobScheduler``): it leaves
        the ``repeat`` zset, which every BullMQ worker follows, keeps its hash (template,
        iteration count, offset) marked ``bullqPaused``, and its pending run is removed
        unless it has started (an active run finishes and adds no next one).

        Returns:
            The id of the pending run removed (``repeat:<id>:<ms>``), or None when none was
            waiting.

        Raises:
            ValueError: no such scheduler, paused already, or its schedule is over.
        """
        return self._drive(self._pause_scheduler(scheduler_id))

    async def apause_job_scheduler(self, scheduler_id: str) -> str | None:
        """Async twin of :meth:`pause_job_scheduler`."""
        return await self._adrive(self._pause_scheduler(scheduler_id))

    def _pause_scheduler(self, scheduler_id: str) -> Steps[str | None]:
        reply = yield calls.pause_job_scheduler(self.keys, scheduler_id=scheduler_id, now=now_ms())
        if isinstance(reply, int):
            raise ValueError(_NOT_PAUSED[reply].format(scheduler_id))
        return reply or None

    def resume_job_scheduler(self, scheduler_id: str) -> Job | None:
        """Resume a paused scheduler: upsert its stored definition (its iteration count and
        ``every`` alignment go on), which drops the pause.

        Returns:
            Its pending run, or None when its schedule is over (end date passed or limit
            reached): nothing is written and it stays paused.

        Raises:
            ValueError: no such scheduler, or it is not paused.
            ScriptError: the upsert's script refused (as for ``upsert_job_scheduler``).
        """
        return self._drive(self._resume_scheduler(scheduler_id))

    async def aresume_job_scheduler(self, scheduler_id: str) -> Job | None:
        """Async twin of :meth:`resume_job_scheduler`."""
        return await self._adrive(self._resume_scheduler(scheduler_id))

    def _resume_scheduler(self, scheduler_id: str) -> Steps[Job | None]:
        scheduler: JobScheduler | None = yield self._scheduler_read(scheduler_id)
        if scheduler is None or not scheduler.paused:
            raise ValueError(f"job scheduler {scheduler_id!r} is not paused")
        repeat, template = scheduler.repeat_options(), scheduler.template()
        job: Job | None = yield from self._upsert(scheduler_id, repeat, template, {})
        return job

    def get_paused_job_schedulers(self) -> list[JobScheduler]:
        """The paused schedulers, by id (each with ``paused_ms``; ``next_millis`` None).

        Members of the paused set that are no longer paused (resumed by a Node or PyPI
        upsert, which does not know the set) or gone are left out."""
        return self._drive(self._paused_schedulers())

    async def aget_paused_job_schedulers(self) -> list[JobScheduler]:
        """Async twin of :meth:`get_paused_job_schedulers`."""
        return await self._adrive(self._paused_schedulers())

    def _paused_schedulers(self) -> Steps[list[JobScheduler]]:
        members: Any = yield Command("smembers", (self.keys[PAUSED_SCHEDULERS],), {})
        ids = sorted(str(to_str(m)) for m in members)
        hashes = tuple(("HGETALL", self.keys[f"repeat:{i}"]) for i in ids)
        raws: list[Any] = (yield Read(hashes, list, transaction=False)) if ids else []
        found = [
            JobScheduler.from_hash(i, raw, None) for i, raw in zip(ids, raws, strict=True) if raw
        ]
        return [s for s in found if s.paused]
