"""Queue: add jobs, pause and resume, promote and remove, cancel and maintenance
(BullMQ's ``Queue``); the reads are in :mod:`.getters`, the limits in :mod:`.limiting`, the
clients in :mod:`.base`."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import partial
from typing import Any

from .. import calls, instrument
from ..calls import Batch, Call, Command, Steps, operations
from ..connection import reaching
from ..errors import SerializationError
from ..gc_pause import paused_gc
from ..job import Job
from ..names import check_same_slot
from ..options import JobOptions, now_ms, parent_link, to_delay_ms
from ..serialization import Encoded, checked_text, dumps, to_str
from .getters import QueueGetters
from .limiting import QueueLimits
from .schedulers import JobSchedulers


def _what(name: str, flow: tuple[str, bool, bool] | None, item: int | None) -> str:
    """A job's description in the errors of an add."""
    what = f"job {name!r}" if flow is None else f"flow node {name!r}"
    return what if item is None else f"{what} (item {item} of the bulk add)"


class Queue(QueueGetters, JobSchedulers, QueueLimits):
    """One BullMQ queue on Redis.

    Args:
        name: queue name (no ``:``, ``{`` or ``}``; see ``keys.validate_queue_name``).
        connection: a Redis URL, a redis-py client (sync or asyncio, any ``decode_responses``),
            or a :class:`~django_bullq.core.connection.Connection`. Default local Redis.
        prefix: key prefix, BullMQ's ``bull`` by default. On Redis Cluster it must hold a hash
            tag such as ``{bull}``.
        default_job_options: :class:`JobOptions` applied under each add's own options.
        max_payload_bytes: largest ``data`` (bytes of JSON) :meth:`add` accepts; 0 = no limit.

    Raises:
        InvalidNameError: bad name or prefix.
        ConnectionConfigError: Redis Cluster and a prefix without a hash tag.
    """

    #: This queue's own :class:`~django_bullq.core.instrument.Instrumentation` (beside the
    #: global ones); see :meth:`add_instrumentation`.
    instrumentations: tuple[instrument.Instrumentation, ...] = ()

    def add_instrumentation(self, instrumentation: instrument.Instrumentation) -> None:
        """Let ``instrumentation`` see this queue's adds (and no other queue's)."""
        if instrumentation not in self.instrumentations:
            self.instrumentations = (*self.instrumentations, instrumentation)

    # --- add -------------------------------------------------------------------------------

    def _add_call(
        self,
        name: str,
        data: Any,
        options: JobOptions | None,
        overrides: dict[str, Any],
        memo: dict[Any, Any] | None = None,
        flow: tuple[str, bool, bool] | None = None,
        item: int | None = None,
        carry: Callable[[str, str, dict[str, Any]], None] | None = None,
    ) -> tuple[Call[Any], dict[str, Any], tuple[int, int, int]]:
        """The ``addJob`` call of one job, its stored options and (timestamp, delay, priority).

        ``memo`` (one per bulk call) lets jobs that share one options object (no per-job
        options, or one ``overrides`` dict for many jobs) share its validation and stored JSON
        instead of redoing them per job.
        ``flow`` (a node of :class:`~django_bullq.core.flow.FlowProducer`: its id when the
        options name none, whether its parent is in the same flow, whether it has children)
        builds ``addFlowJob`` instead. ``item``: the job's index in a bulk add, named in the
        errors. ``carry`` (instrumentations: :meth:`Producing.carry
        <django_bullq.core.instrument.Producing.carry>`) may change the stored options
        before they are written (a trace carrier under ``tm``).
        """
        shared = memo.get(("overrides", id(overrides))) if memo is not None else None
        if shared is not None and shared[0] is overrides:
            opts = shared[1]  # another job of this bulk call passed this very dict
        else:
            opts = (
                (options or self.default_job_options).merged(**overrides)
                if overrides
                else (options or self.default_job_options)
            )
            if memo is not None and overrides:
                memo[("overrides", id(overrides))] = (overrides, opts)  # held: ids stay unique
        if not isinstance(name, str):
            raise TypeError("job name must be a string")
        now = now_ms()
        if memo is None or memo.get(id(opts)) is not opts:
            opts.validate()
            if memo is not None:
                memo[id(opts)] = opts  # holds opts, so its id stays its own for the call
        delay = to_delay_ms(opts.delay, now)
        try:  # the job's description is formatted for an error only (a bulk add's hot path)
            text = checked_text(data, self.max_payload_bytes, "data")
        except SerializationError:  # again, to raise it naming the job
            checked_text(data, self.max_payload_bytes, f"data of {_what(name, flow, item)}")
            raise
        stored, opts_text = self._stored(opts, delay, memo, carry, name, (name, flow, item))
        timestamp = opts.timestamp if opts.timestamp is not None else now
        parent_key, parent_json = parent_link(stored)
        if parent_key and self.is_cluster:
            check_same_slot(self.keys.queue_key, parent_key)
        build = (
            calls.add_job
            if flow is None
            else partial(calls.add_flow_job, parent_later=flow[1], has_children=flow[2])
        )
        call = build(
            self.keys,
            job_id=opts.job_id or (flow[0] if flow else ""),
            name=name,
            data=text,
            opts=opts_text,
            timestamp=timestamp,
            delay=delay,
            priority=opts.priority,
            lifo=opts.lifo,
            parent_key=parent_key,
            parent=parent_json,
        )
        return call, stored, (int(timestamp), int(delay), int(opts.priority))

    def _stored(
        self,
        opts: JobOptions,
        delay: int,
        memo: dict[Any, Any] | None,
        carry: Callable[[str, str, dict[str, Any]], None] | None,
        name: str,
        where: tuple[str, tuple[str, bool, bool] | None, int | None],
    ) -> tuple[dict[str, Any], str]:
        """A job's stored options and their JSON (shared in a bulk call, unless ``carry``);
        ``where``: :func:`_what`'s arguments, for the error."""
        cached = memo.get((id(opts), delay)) if memo is not None and carry is None else None
        if cached is not None:
            return dict(cached[0]), cached[1]  # each Job gets its own opts dict
        stored = opts.to_stored(delay)
        if carry is not None:  # its own options per job: a carrier may differ per job
            carry(self.name, name, stored)
        opts_text = dumps(stored, f"options of {_what(*where)}")
        if memo is not None and carry is None:
            memo[(id(opts), delay)] = (stored, opts_text)
        return stored, opts_text

    def add(
        self, name: str, data: Any = None, options: JobOptions | None = None, **overrides: Any
    ) -> Job:
        """Add one job (BullMQ ``Queue.add``).

        Args:
            name: job name (a task's name, or any name a BullMQ worker expects).
            data: JSON value stored as the job's ``data``, or an
                :class:`~django_bullq.core.serialization.Encoded` one (its text stored as is).
            options: :class:`JobOptions`; ``overrides`` are JobOptions fields applied on top
                (e.g. ``delay=5000`` ms, ``priority=1``, ``attempts=3``).

        Returns:
            The :class:`Job` (for a duplicate custom id: the existing job's id).

        Raises:
            SerializationError: data not JSON.
            PayloadTooLargeError: data over ``max_payload_bytes`` (a SerializationError).
            ValueError: bad options.
            InvalidNameError: a bad custom job id.
            ParentMissing: the parent job does not exist.
            CrossSlotError: on Redis Cluster, the parent is in another hash slot.
            RedisUnavailableError: Redis refused or did not answer (connect timeout 5 s, read
                30 s by default); the message names host:port, never the password.
        """
        # Written out in both halves, not as a generator of steps: a single add is the
        # producer's hot path, and driving a generator costs it about 7% CPU.
        if self.instrumentations or instrument.GLOBAL.hooks:
            return self._drive(self._observed_add(name, data, options, overrides))
        call, stored, meta = self._add_call(name, data, options, overrides)
        with reaching(self.connection, f"add job {name!r} to queue {self.name!r}"):
            job_id = self._run(call)
        return self._new_job(str(to_str(job_id)), name, data, meta, stored)

    async def aadd(
        self, name: str, data: Any = None, options: JobOptions | None = None, **overrides: Any
    ) -> Job:
        """Async twin of :meth:`add` (concurrent adds of one event loop share a write)."""
        if self.instrumentations or instrument.GLOBAL.hooks:
            return await self._adrive(self._observed_add(name, data, options, overrides))
        call, stored, meta = self._add_call(name, data, options, overrides)
        with reaching(self.connection, f"add job {name!r} to queue {self.name!r}"):
            job_id = await self._arun(call)
        return self._new_job(str(to_str(job_id)), name, data, meta, stored)

    def _observed_add(
        self, name: str, data: Any, options: JobOptions | None, overrides: dict[str, Any]
    ) -> Steps[Job]:
        """:meth:`add` as steps, seen by the instrumentations (off the hot path)."""
        seen = instrument.Producing(
            instrument.active(self.instrumentations), instrument.ADD, self.name, 1
        )

        def steps() -> Steps[Job]:
            call, stored, meta = self._add_call(name, data, options, overrides, carry=seen.carry)
            with reaching(self.connection, f"add job {name!r} to queue {self.name!r}"):
                job_id = yield call
            return self._new_job(str(to_str(job_id)), name, data, meta, stored)

        return instrument.observe(seen, steps(), lambda job: (job,))

    def _new_job(
        self, job_id: str, name: str, data: Any, meta: tuple[int, int, int], stored: dict[str, Any]
    ) -> Job:
        return Job.added(
            self, job_id, name, data.value if type(data) is Encoded else data, stored, meta
        )

    def add_bulk(
        self,
        jobs: Iterable[tuple[str, Any] | tuple[str, Any, dict[str, Any]]],
        *,
        chunk_size: int = 0,
    ) -> list[Job]:
        """Add many jobs in one round trip (BullMQ ``addBulk``: a pipeline, not atomic as a whole).

        Args:
            jobs: ``(name, data)`` or ``(name, data, {JobOptions field: value})`` tuples
                (``data`` as :meth:`add` takes it).
            chunk_size: at most this many jobs per write (one round trip each); 0 = all in one.

        Returns:
            The jobs, in input order. Every job is validated before anything is sent.

        Raises:
            ParentMissing: a job names a parent that does not exist (the other jobs are added,
                as with BullMQ's ``addBulk``). Validation errors as :meth:`add`.
            RedisUnavailableError: as :meth:`add`; the chunks written before it stay added.
            ValueError: ``chunk_size`` below 0.
        """
        return self._drive(self._add_bulk_steps(jobs, chunk_size))

    async def aadd_bulk(
        self,
        jobs: Iterable[tuple[str, Any] | tuple[str, Any, dict[str, Any]]],
        *,
        chunk_size: int = 0,
    ) -> list[Job]:
        """Async twin of :meth:`add_bulk`."""
        return await self._adrive(self._add_bulk_steps(jobs, chunk_size))

    def _add_bulk_steps(
        self, jobs: Iterable[tuple[str, Any] | tuple[str, Any, dict[str, Any]]], chunk_size: int
    ) -> Steps[list[Job]]:
        if not isinstance(chunk_size, int) or chunk_size < 0:
            raise ValueError(f"chunk_size must be an int >= 0, got {chunk_size!r}")
        jobs = list(jobs)
        seen = instrument.producing(
            self.instrumentations, instrument.ADD_BULK, self.name, len(jobs)
        )
        with paused_gc(len(jobs)):  # nothing built here is a cycle (see gc_pause)
            if seen is None:
                return (yield from self._bulk_steps(jobs, chunk_size, None))
            steps = self._bulk_steps(jobs, chunk_size, seen)
            return (yield from instrument.observe(seen, steps, list))

    def _bulk_steps(
        self, jobs: list[Any], chunk_size: int, seen: instrument.Producing | None
    ) -> Steps[list[Job]]:
        memo: dict[Any, Any] = {}
        carry = seen.carry if seen is not None else None
        adds = [
            self._add_call(
                j[0], j[1], None, j[2] if len(j) > 2 else {}, memo, item=index, carry=carry
            )
            for index, j in enumerate(jobs)
        ]
        step = chunk_size or max(len(adds), 1)
        ids: list[Any] = []
        for start in range(0, len(adds), step):
            chunk = adds[start : start + step]
            with reaching(self.connection, f"add {len(chunk)} jobs to queue {self.name!r}"):
                ids += yield Batch(tuple(add[0] for add in chunk))
        return [
            self._new_job(str(to_str(i)), j[0], j[1], a[2], a[1])
            for i, a, j in zip(ids, adds, jobs, strict=True)
        ]

    # --- mutations -------------------------------------------------------------------------

    def pause(self) -> None:
        """Pause the queue for every worker (BullMQ v6: ``meta.paused``; jobs stay in wait)."""
        self._run(calls.pause(self.keys, state="paused"))

    async def apause(self) -> None:
        """Async twin of :meth:`pause`."""
        await self._arun(calls.pause(self.keys, state="paused"))

    def resume(self) -> None:
        """Resume the queue; legacy v5 ``paused`` lists are migrated into wait."""
        self._drive(operations.resume(self.keys))

    async def aresume(self) -> None:
        """Async twin of :meth:`resume`."""
        await self._adrive(operations.resume(self.keys))

    def promote(self, job_id: str) -> None:
        """Move a delayed job to wait now. Raises JobNotInState when it is not delayed."""
        self._run(calls.promote(self.keys, job_id=job_id))

    async def apromote(self, job_id: str) -> None:
        """Async twin of :meth:`promote`."""
        await self._arun(calls.promote(self.keys, job_id=job_id))

    def remove(self, job_id: str, *, remove_children: bool = True) -> bool:
        """Delete a job (BullMQ ``remove``). Returns False when a worker holds its lock.

        Args:
            remove_children: also delete its children, grandchildren, ... in any queue
                (BullMQ's default); nothing is deleted if one of them is locked. A parent
                waiting for this job as its last pending child is released.

        Raises:
            JobNotFound: no such job. SchedulerIteration: the current iteration of a scheduler.
        """
        return self._run(
            calls.remove_job(self.keys, job_id=job_id, remove_children=remove_children)
        )

    async def aremove(self, job_id: str, *, remove_children: bool = True) -> bool:
        """Async twin of :meth:`remove`."""
        call = calls.remove_job(self.keys, job_id=job_id, remove_children=remove_children)
        return await self._arun(call)

    def trim_events(self, max_length: int) -> int:
        """``XTRIM events MAXLEN ~ max_length``; returns the entries removed."""
        return int(self.client.xtrim(self.keys["events"], maxlen=max_length, approximate=True))

    # --- maintenance (django_bullq.core.calls.operations) -----------------------------------

    def promote_jobs(self, count: int = 1000) -> int:
        """Promote every delayed job now, ``count`` per call; returns how many (BullMQ
        ``promoteJobs``). See :func:`~django_bullq.core.calls.operations.promote_jobs`."""
        return self._drive(operations.promote_jobs(self.keys, count))

    async def apromote_jobs(self, count: int = 1000) -> int:
        """Async twin of :meth:`promote_jobs`."""
        return await self._adrive(operations.promote_jobs(self.keys, count))

    def retry_jobs(
        self, state: str = "failed", count: int = 1000, timestamp: int | None = None
    ) -> int:
        """Failed/completed jobs finished at or before ``timestamp`` ms back to wait; returns
        how many (BullMQ ``retryJobs``). See
        :func:`~django_bullq.core.calls.operations.retry_jobs`."""
        return self._drive(operations.retry_jobs(self.keys, state, count, timestamp))

    async def aretry_jobs(
        self, state: str = "failed", count: int = 1000, timestamp: int | None = None
    ) -> int:
        """Async twin of :meth:`retry_jobs`."""
        return await self._adrive(operations.retry_jobs(self.keys, state, count, timestamp))

    def clean(self, grace_ms: Any, limit: int = 0, state: str = "completed") -> list[str]:
        """Remove jobs of ``state`` older than ``grace_ms`` ms, at most ``limit`` (0 = all);
        returns their ids (BullMQ ``clean``). See
        :func:`~django_bullq.core.calls.operations.clean`."""
        return self._drive(operations.clean(self.keys, grace_ms, limit, state))

    async def aclean(self, grace_ms: Any, limit: int = 0, state: str = "completed") -> list[str]:
        """Async twin of :meth:`clean`."""
        return await self._adrive(operations.clean(self.keys, grace_ms, limit, state))

    def drain(self, *, delayed: bool = False) -> int:
        """Remove all waiting (and, if asked, delayed) jobs; returns how many (BullMQ
        ``drain``). See :func:`~django_bullq.core.calls.operations.drain`."""
        return self._drive(operations.drain(self.keys, delayed=delayed))

    async def adrain(self, *, delayed: bool = False) -> int:
        """Async twin of :meth:`drain`."""
        return await self._adrive(operations.drain(self.keys, delayed=delayed))

    def obliterate(self, *, force: bool = False, count: int = 1000) -> None:
        """Pause, then delete the queue with all its jobs in batches of ``count`` (BullMQ
        ``obliterate``). Raises ActiveJobsError unless ``force``. See
        :func:`~django_bullq.core.calls.operations.obliterate`."""
        self._drive(operations.obliterate(self.keys, force=force, count=count))

    async def aobliterate(self, *, force: bool = False, count: int = 1000) -> None:
        """Async twin of :meth:`obliterate`."""
        await self._adrive(operations.obliterate(self.keys, force=force, count=count))

    # --- cancellation (docs/cancellation.md) -----------------------------------------------

    def cancel_job(self, job_id: str, reason: str = "", *, unrecoverable: bool = False) -> int:
        """Ask every worker of this queue, in any process, to cancel a running job.

        Publishes ``{"action": "cancel", "jobId", "reason"}`` (JSON) on the Pub/Sub channel
        ``<prefix>:<queue>:control``; the worker running the job cancels it (see
        ``Worker.cancel_job``). Fire and forget: a job not running at that moment is unaffected.

        Args:
            job_id: the job's id. reason: text for the ``failedReason`` ("cancelled: <reason>").
            unrecoverable: fail without retrying.

        Returns:
            How many subscribed workers received the message (Redis ``PUBLISH``; on Redis
            Cluster the sharded ``SPUBLISH`` to the node owning the queue's slot).
        """
        return self._command(self._cancel_command(job_id, reason, unrecoverable=unrecoverable))

    async def acancel_job(
        self, job_id: str, reason: str = "", *, unrecoverable: bool = False
    ) -> int:
        """Async twin of :meth:`cancel_job`."""
        return await self._acommand(
            self._cancel_command(job_id, reason, unrecoverable=unrecoverable)
        )

    def _cancel_command(self, job_id: str, reason: str, *, unrecoverable: bool) -> Command[int]:
        from ..cancel import CONTROL_SUFFIX, cancel_message

        message = cancel_message(job_id, reason, unrecoverable=unrecoverable)
        publish = "spublish" if self.is_cluster else "publish"
        return Command(publish, (self.keys[CONTROL_SUFFIX], message), parse=int)
