"""Queue: add jobs, read them back, count them, pause and resume (BullMQ's ``Queue``)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Sequence
from typing import Any, TypeVar

from .. import calls, limits
from ..autopipeline import AutoPipeline
from ..calls import FETCH_KEYS, Call, Read, Steps, adrive, drive, operations, reads
from ..connection import (
    Connection,
    ConnectionConfigError,
    as_connection,
    is_cluster,
    reaching,
)
from ..errors import JobNotFound, JobTimeoutError
from ..job import STATES, Job
from ..keys import QueueKeys, check_same_slot, has_hash_tag
from ..options import JobOptions, now_ms, parent_link, to_delay_ms
from ..scheduler import JobSchedulerMixin
from ..scripts import Scripts, raise_on_code
from ..serialization import DEFAULT_MAX_PAYLOAD_BYTES, check_size, dumps, loads, to_str

T = TypeVar("T")
R = TypeVar("R")


class Queue(JobSchedulerMixin):
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

    def __init__(
        self,
        name: str,
        connection: Any = "redis://127.0.0.1:6379/0",
        *,
        prefix: str = "bull",
        default_job_options: JobOptions | None = None,
        max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES,
    ) -> None:
        self.keys = QueueKeys(name, prefix)
        self.name = name
        self.prefix = prefix
        self.connection: Connection = as_connection(connection)
        self.default_job_options = default_job_options or JobOptions()
        self.max_payload_bytes = max_payload_bytes
        self._local = threading.local()
        self._sync_scripts: Scripts | None = None
        self._fetch_keys = [self.keys[s] for s in FETCH_KEYS]
        #: Whether the queue is on Redis Cluster, where every key of the queue must hash to
        #: one slot (case B32).
        self.is_cluster = (
            self.connection.scheme == "redis+cluster"
            or is_cluster(self.connection.client)
            or is_cluster(self.connection.async_client)
        )
        if self.is_cluster:
            if not has_hash_tag(prefix):
                raise ConnectionConfigError(
                    f"queue {name!r}: on Redis Cluster the prefix must hold a hash tag, e.g. "
                    f"'{{{prefix}}}', so all keys of a queue share one slot"
                )

    def __repr__(self) -> str:
        return f"<Queue {self.keys.queue_key}>"

    # --- clients ---------------------------------------------------------------------------

    @property
    def client(self) -> Any:
        """Synchronous redis-py client."""
        return self.connection.sync_client()

    @property
    def scripts(self) -> Scripts:
        if self._sync_scripts is None:
            self._sync_scripts = Scripts(self.client)
        return self._sync_scripts

    @property
    def aclient(self) -> Any:
        """Asyncio client of the running event loop (one per loop)."""
        import asyncio

        loop = asyncio.get_running_loop()
        cached = getattr(self._local, "aclient", None)
        if cached is None or cached[0] is not loop:
            client = self.connection.new_async_client()
            scripts = Scripts(client)
            self._local.aclient = (loop, client, scripts, AutoPipeline(client, scripts))
        return self._local.aclient[1]

    @property
    def ascripts(self) -> Scripts:
        self.aclient  # noqa: B018 - make sure the per-loop cache exists
        scripts: Scripts = self._local.aclient[2]
        return scripts

    @property
    def apipeline(self) -> AutoPipeline:
        """The running loop's :class:`AutoPipeline`: concurrent adds share one write."""
        self.aclient  # noqa: B018 - make sure the per-loop cache exists
        pipe: AutoPipeline = self._local.aclient[3]
        return pipe

    # --- script calls (django_bullq.core.calls) --------------------------------------------

    def _run(self, call: Call[T]) -> T:
        """Run one script call on the sync client; its parsed reply."""
        reply = self.scripts.run(
            call.script, call.keys, call.args, job_id=call.job_id, raise_codes=call.raise_codes
        )
        return call.parse(reply)

    async def _arun(self, call: Call[T]) -> T:
        """Async twin of :meth:`_run` (the running loop's client)."""
        reply = await self.ascripts.arun(
            call.script, call.keys, call.args, job_id=call.job_id, raise_codes=call.raise_codes
        )
        return call.parse(reply)

    def _drive(self, steps: Steps[R]) -> R:
        """Run an operation of several round trips (a generator of calls) to its end."""
        return drive(self._step, steps)

    async def _adrive(self, steps: Steps[R]) -> R:
        """Async twin of :meth:`_drive`."""
        return await adrive(self._astep, steps)

    def _step(self, step: Call[Any] | Read[Any]) -> Any:
        return self._read(step) if isinstance(step, Read) else self._run(step)

    async def _astep(self, step: Call[Any] | Read[Any]) -> Any:
        return await (self._aread(step) if isinstance(step, Read) else self._arun(step))

    def _read(self, read: Read[T]) -> T:
        """Send plain commands in one MULTI/EXEC; their parsed replies."""
        pipe = self.client.pipeline(transaction=read.transaction)
        for command in read.commands:
            pipe.execute_command(*command)
        return read.parse(pipe.execute())

    async def _aread(self, read: Read[T]) -> T:
        """Async twin of :meth:`_read`."""
        pipe = self.aclient.pipeline(transaction=read.transaction)
        for command in read.commands:
            pipe.execute_command(*command)
        return read.parse(await pipe.execute())

    def fetch_keys(self) -> list[str]:
        """KEYS[1..11] of every script that can fetch a job (built once: hot path)."""
        return self._fetch_keys

    # --- add -------------------------------------------------------------------------------

    def _add_call(
        self,
        name: str,
        data: Any,
        options: JobOptions | None,
        overrides: dict[str, Any],
        memo: dict[Any, Any] | None = None,
    ) -> tuple[Call[Any], dict[str, Any], tuple[int, int, int]]:
        """The ``addJob`` call of one job, its stored options and (timestamp, delay, priority).

        ``memo`` (one per bulk call) lets jobs that share one options object (no per-job
        options) share its validation and stored JSON instead of redoing them per job.
        """
        opts = (
            (options or self.default_job_options).merged(**overrides)
            if overrides
            else (options or self.default_job_options)
        )
        if not isinstance(name, str):
            raise TypeError("job name must be a string")
        now = now_ms()
        memo = None if overrides else memo
        if memo is None or memo.get(id(opts)) is not opts:
            opts.validate()
            if memo is not None:
                memo[id(opts)] = opts  # holds opts, so its id stays its own for the call
        delay = to_delay_ms(opts.delay, now)
        data_text = dumps(data, f"data of job {name!r}")
        check_size(data_text, self.max_payload_bytes, f"data of job {name!r}")
        cached = memo.get((id(opts), delay)) if memo is not None else None
        if cached is None:
            stored = opts.to_stored(delay)
            opts_text = dumps(stored, f"options of job {name!r}")
            if memo is not None:
                memo[(id(opts), delay)] = (stored, opts_text)
        else:
            stored, opts_text = dict(cached[0]), cached[1]  # each Job gets its own opts dict
        timestamp = opts.timestamp if opts.timestamp is not None else now
        parent_key, parent_json = parent_link(stored)
        if parent_key and self.is_cluster:
            check_same_slot(self.keys.queue_key, parent_key)
        call = calls.add_job(
            self.keys,
            job_id=opts.job_id or "",
            name=name,
            data=data_text,
            opts=opts_text,
            timestamp=timestamp,
            delay=delay,
            priority=opts.priority,
            lifo=opts.lifo,
            parent_key=parent_key,
            parent=parent_json,
        )
        return call, stored, (timestamp, delay, opts.priority)

    def add(
        self, name: str, data: Any = None, options: JobOptions | None = None, **overrides: Any
    ) -> Job:
        """Add one job (BullMQ ``Queue.add``).

        Args:
            name: job name (a task's name, or any name a BullMQ worker expects).
            data: JSON value stored as the job's ``data``.
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
        call, stored, meta = self._add_call(name, data, options, overrides)
        with reaching(self.connection, f"add job {name!r} to queue {self.name!r}"):
            job_id = to_str(self._run(call))
        return self._new_job(str(job_id), name, data, meta, stored)

    async def aadd(
        self, name: str, data: Any = None, options: JobOptions | None = None, **overrides: Any
    ) -> Job:
        """Async twin of :meth:`add`."""
        call, stored, meta = self._add_call(name, data, options, overrides)
        with reaching(self.connection, f"add job {name!r} to queue {self.name!r}"):
            job_id = to_str(
                await self.apipeline.run(call.script, call.keys, call.args, job_id=call.job_id)
            )
        return self._new_job(str(job_id), name, data, meta, stored)

    def _new_job(
        self, job_id: str, name: str, data: Any, meta: tuple[int, int, int], stored: dict[str, Any]
    ) -> Job:
        return Job(
            queue=self,
            id=job_id,
            name=name,
            data=data,
            opts=stored,
            timestamp=int(meta[0]),
            delay=int(meta[1]),
            priority=int(meta[2]),
        )

    def add_bulk(
        self, jobs: Iterable[tuple[str, Any] | tuple[str, Any, dict[str, Any]]]
    ) -> list[Job]:
        """Add many jobs in one round trip (BullMQ ``addBulk``: a pipeline, not atomic as a whole).

        Args:
            jobs: ``(name, data)`` or ``(name, data, {JobOptions field: value})`` tuples.

        Returns:
            The jobs, in input order. Every job is validated before anything is sent.

        Raises:
            ParentMissing: a job names a parent that does not exist (the other jobs are added,
                as with BullMQ's ``addBulk``). Validation errors as :meth:`add`.
        """
        jobs = list(jobs)
        memo: dict[Any, Any] = {}
        adds = [
            self._add_call(j[0], j[1], None, dict(j[2]) if len(j) > 2 else {}, memo) for j in jobs
        ]
        with reaching(self.connection, f"add {len(adds)} jobs to queue {self.name!r}"):
            pipe = self.client.pipeline(transaction=False)
            for call, _, _ in adds:
                self.scripts.run(call.script, call.keys, call.args, client=pipe)
            ids = [raise_on_code(i, "addJob", None) for i in pipe.execute()]
        return [
            self._new_job(str(to_str(i)), j[0], j[1], a[2], a[1])
            for i, a, j in zip(ids, adds, jobs, strict=True)
        ]

    async def aadd_bulk(
        self, jobs: Iterable[tuple[str, Any] | tuple[str, Any, dict[str, Any]]]
    ) -> list[Job]:
        """Async twin of :meth:`add_bulk`."""
        jobs = list(jobs)
        memo: dict[Any, Any] = {}
        adds = [
            self._add_call(j[0], j[1], None, dict(j[2]) if len(j) > 2 else {}, memo) for j in jobs
        ]
        with reaching(self.connection, f"add {len(adds)} jobs to queue {self.name!r}"):
            if self.apipeline.enabled:
                ids = await self.apipeline.run_many(
                    "addJob", [(a[0].keys, a[0].args) for a in adds]
                )
            else:  # Redis Cluster: a cluster pipeline (scripts go as EVAL there)
                pipe = self.aclient.pipeline(transaction=False)
                for call, _, _ in adds:
                    await self.ascripts.arun(call.script, call.keys, call.args, client=pipe)
                ids = [raise_on_code(i, "addJob", None) for i in await pipe.execute()]
        return [
            self._new_job(str(to_str(i)), j[0], j[1], a[2], a[1])
            for i, a, j in zip(ids, adds, jobs, strict=True)
        ]

    # --- reads -----------------------------------------------------------------------------

    def get_job(self, job_id: str, required: bool = False) -> Job | None:
        """The job with id ``job_id``, or None (``required=True``: raise JobNotFound)."""
        raw = self.client.hgetall(self.keys.job(str(job_id)))
        return self._job_or_none(str(job_id), raw, required)

    async def aget_job(self, job_id: str, required: bool = False) -> Job | None:
        """Async twin of :meth:`get_job`."""
        raw = await self.aclient.hgetall(self.keys.job(str(job_id)))
        return self._job_or_none(str(job_id), raw, required)

    def _job_or_none(self, job_id: str, raw: Any, required: bool) -> Job | None:
        if not raw:
            if required:
                raise JobNotFound(-1, job_id, "get_job")
            return None
        return Job.from_hash(self, job_id, raw)

    def _states(self, states: Sequence[str]) -> list[str]:
        chosen = list(states) or list(STATES)
        for s in chosen:
            if s not in STATES and s != "paused":
                raise ValueError(f"unknown job state {s!r}; expected one of {STATES}")
        return chosen

    def get_job_counts(self, *states: str) -> dict[str, int]:
        """Jobs per state, read atomically (BullMQ ``getJobCounts``).

        Args:
            states: state names (default: all of :data:`~django_bullq.core.job.STATES`).
                ``waiting`` counts the wait list; a legacy v5 ``paused`` list can be asked for.

        Returns:
            ``{state: count}``.
        """
        return self._read(reads.job_counts(self.keys, self._states(states)))

    async def aget_job_counts(self, *states: str) -> dict[str, int]:
        """Async twin of :meth:`get_job_counts`."""
        return await self._aread(reads.job_counts(self.keys, self._states(states)))

    def count(self) -> int:
        """Jobs not yet started: waiting + delayed + prioritized + waiting-children."""
        return sum(
            self.get_job_counts("waiting", "delayed", "prioritized", "waiting-children").values()
        )

    def get_job_state(self, job_id: str) -> str:
        """BullMQ state of a job: a name from :data:`STATES`, or ``"unknown"``."""
        return self._read(reads.job_state(self.keys, str(job_id)))

    async def aget_job_state(self, job_id: str) -> str:
        """Async twin of :meth:`get_job_state`."""
        return await self._aread(reads.job_state(self.keys, str(job_id)))

    def get_job_ids(
        self, *states: str, start: int = 0, end: int = -1, asc: bool = False
    ) -> list[str]:
        """Job ids in the given states, newest first unless ``asc`` (BullMQ ``getRanges``)."""
        return self._read(reads.job_ids(self.keys, self._states(states), start, end, asc))

    async def aget_job_ids(
        self, *states: str, start: int = 0, end: int = -1, asc: bool = False
    ) -> list[str]:
        """Async twin of :meth:`get_job_ids`."""
        return await self._aread(reads.job_ids(self.keys, self._states(states), start, end, asc))

    def get_jobs(self, *states: str, start: int = 0, end: int = -1, asc: bool = False) -> list[Job]:
        """Jobs in the given states (ids without a hash are skipped; BullMQ ``getJobs``)."""
        steps = reads.job_hashes(self.keys, self._states(states), start, end, asc)
        return [Job.from_hash(self, i, raw) for i, raw in self._drive(steps)]

    async def aget_jobs(
        self, *states: str, start: int = 0, end: int = -1, asc: bool = False
    ) -> list[Job]:
        """Async twin of :meth:`get_jobs`."""
        steps = reads.job_hashes(self.keys, self._states(states), start, end, asc)
        return [Job.from_hash(self, i, raw) for i, raw in await self._adrive(steps)]

    def _outcome_pipe(self, pipe: Any, job_id: str) -> None:
        pipe.xrevrange(self.keys["events"], count=1)
        pipe.zscore(self.keys["completed"], job_id)
        pipe.zscore(self.keys["failed"], job_id)
        pipe.hmget(self.keys.job(job_id), "returnvalue", "failedReason", "finishedOn")
        pipe.exists(self.keys.job(job_id))

    @staticmethod
    def _outcome(replies: list[Any]) -> tuple[tuple[str, Any] | None, str, bool]:
        """(outcome or None, last events id, job hash exists) from :meth:`_outcome_pipe`."""
        last, completed, failed, (ret, reason, finished), exists = replies
        last_id = to_str(last[0][0]) if last else "0-0"
        if completed is not None or (finished is not None and reason is None):
            return ("completed", loads(ret) if ret is not None else None), last_id or "0-0", True
        if failed is not None or finished is not None:
            return ("failed", to_str(reason)), last_id or "0-0", True
        return None, last_id or "0-0", bool(exists)

    def _search_events(self, entries: list[Any], job_id: str) -> tuple[str, Any] | None:
        """The outcome of ``job_id`` from events (newest first); for jobs removed at finish."""
        for _, raw in entries:
            fields = {to_str(k): to_str(v) for k, v in raw.items()}
            if fields.get("jobId") != job_id:
                continue
            if fields.get("event") == "completed":
                return ("completed", loads(fields.get("returnvalue")))
            if fields.get("event") == "failed":
                return ("failed", fields.get("failedReason"))
        return None

    def _missing(self, job_id: str, found: tuple[str, Any] | None) -> tuple[str, Any]:
        if found is None:
            raise JobNotFound(-1, job_id, "wait")
        return found

    def finished_outcome(self, job_id: str) -> tuple[str, Any] | None:
        """``("completed", returnvalue)``, ``("failed", reason)`` or None while unfinished.

        A job removed when it finished (removeOnComplete / removeOnFail) is answered from the
        events stream.

        Raises:
            JobNotFound: no such job, and no finish event of it in the events stream.
        """
        return self._poll_outcome(job_id)[0]

    def _poll_outcome(self, job_id: str) -> tuple[tuple[str, Any] | None, str]:
        pipe = self.client.pipeline(transaction=True)
        self._outcome_pipe(pipe, job_id)
        outcome, last_id, exists = self._outcome(pipe.execute())
        if outcome is None and not exists:
            entries = self.client.xrevrange(self.keys["events"], count=20_000)
            outcome = self._missing(job_id, self._search_events(entries, job_id))
        return outcome, last_id

    async def _apoll_outcome(self, job_id: str) -> tuple[tuple[str, Any] | None, str]:
        pipe = self.aclient.pipeline(transaction=True)
        self._outcome_pipe(pipe, job_id)
        outcome, last_id, exists = self._outcome(await pipe.execute())
        if outcome is None and not exists:
            entries = await self.aclient.xrevrange(self.keys["events"], count=20_000)
            outcome = self._missing(job_id, self._search_events(entries, job_id))
        return outcome, last_id

    async def afinished_outcome(self, job_id: str) -> tuple[str, Any] | None:
        """Async twin of :meth:`finished_outcome`."""
        return (await self._apoll_outcome(job_id))[0]

    def wait_until_finished(self, job_id: str, timeout: float | None = 30.0) -> tuple[str, Any]:
        """Block until the job finishes (BullMQ ``waitUntilFinished``).

        Reads the state, then sleeps in ``XREAD BLOCK`` on the events stream from the entry
        seen with that state, so any new event wakes it at once (no polling delay).

        Args:
            timeout: seconds; None waits without limit.

        Returns:
            ``("completed", returnvalue)`` or ``("failed", failedReason)``.

        Raises:
            JobTimeoutError: not finished within ``timeout``. JobNotFound: no such job.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            outcome, last_id = self._poll_outcome(job_id)
            if outcome is not None:
                return outcome
            block_ms = self._block_ms(deadline, job_id, timeout)
            self.client.xread({self.keys["events"]: last_id}, count=1, block=block_ms)

    async def await_finished(self, job_id: str, timeout: float | None = 30.0) -> tuple[str, Any]:
        """Async twin of :meth:`wait_until_finished`."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            outcome, last_id = await self._apoll_outcome(job_id)
            if outcome is not None:
                return outcome
            block_ms = self._block_ms(deadline, job_id, timeout)
            await self.aclient.xread({self.keys["events"]: last_id}, count=1, block=block_ms)

    @staticmethod
    def _block_ms(deadline: float | None, job_id: str, timeout: float | None) -> int:
        if deadline is None:
            return 1000
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise JobTimeoutError(f"job {job_id} did not finish within {timeout} s")
        # at most 1 s per block: well under any client socket timeout
        return max(1, min(int(remaining * 1000), 1000))

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

    def is_paused(self) -> bool:
        """True while ``meta.paused`` exists."""
        return bool(self.client.hexists(self.keys["meta"], "paused"))

    async def ais_paused(self) -> bool:
        """Async twin of :meth:`is_paused`."""
        return bool(await self.aclient.hexists(self.keys["meta"], "paused"))

    def promote(self, job_id: str) -> None:
        """Move a delayed job to wait now. Raises JobNotInState when it is not delayed."""
        self._run(calls.promote(self.keys, job_id=job_id))

    async def apromote(self, job_id: str) -> None:
        """Async twin of :meth:`promote`."""
        await self._arun(calls.promote(self.keys, job_id=job_id))

    def remove(self, job_id: str, remove_children: bool = True) -> bool:
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

    async def aremove(self, job_id: str, remove_children: bool = True) -> bool:
        """Async twin of :meth:`remove`."""
        call = calls.remove_job(self.keys, job_id=job_id, remove_children=remove_children)
        return await self._arun(call)

    def trim_events(self, max_length: int) -> int:
        """``XTRIM events MAXLEN ~ max_length``; returns the entries removed."""
        return int(self.client.xtrim(self.keys["events"], maxlen=max_length, approximate=True))

    def close(self) -> None:
        """Close the synchronous client's connections (asyncio ones close with their loop)."""
        if self.connection.client is not None:
            self.connection.client.close()

    # --- rate limits, global concurrency, deduplication (protocol §5.12-§5.14) ---------------

    def set_global_rate_limit(self, max_jobs: int, duration_ms: int) -> None:
        """At most ``max_jobs`` activations per ``duration_ms`` ms over every worker, ours and
        BullMQ's (BullMQ ``setGlobalRateLimit``: ``meta.max`` / ``meta.duration``).

        A worker's own ``limiter_duration`` wins over ``duration_ms`` (BullMQ's rule), while
        ``max_jobs`` wins over the worker's ``limiter_max``.

        Raises:
            ValueError: ``max_jobs`` or ``duration_ms`` not a positive int.
        """
        self.client.hset(self.keys["meta"], mapping=limits.rate_limit_meta(max_jobs, duration_ms))

    async def aset_global_rate_limit(self, max_jobs: int, duration_ms: int) -> None:
        """Async twin of :meth:`set_global_rate_limit`."""
        await self.aclient.hset(
            self.keys["meta"], mapping=limits.rate_limit_meta(max_jobs, duration_ms)
        )

    def remove_global_rate_limit(self) -> None:
        """Lift the queue-wide rate limit (BullMQ ``removeGlobalRateLimit``)."""
        self.client.hdel(self.keys["meta"], "max", "duration")

    async def aremove_global_rate_limit(self) -> None:
        """Async twin of :meth:`remove_global_rate_limit`."""
        await self.aclient.hdel(self.keys["meta"], "max", "duration")

    def get_global_rate_limit(self) -> dict[str, int] | None:
        """``{"max": jobs, "duration": ms}``, or None when unset (BullMQ ``getGlobalRateLimit``)."""
        return limits.parse_rate_limit(self.client.hmget(self.keys["meta"], "max", "duration"))

    async def aget_global_rate_limit(self) -> dict[str, int] | None:
        """Async twin of :meth:`get_global_rate_limit`."""
        return limits.parse_rate_limit(
            await self.aclient.hmget(self.keys["meta"], "max", "duration")
        )

    def get_rate_limit_ttl(self, max_jobs: int | None = None) -> int:
        """ms until the current rate-limit window ends, 0 when not limited now (BullMQ
        ``getRateLimitTtl``): with ``max_jobs`` (or ``meta.max``) only when the window is full;
        with neither, the limiter key's remaining TTL (a manual :meth:`rate_limit`)."""
        return limits.rate_limit_ttl(
            self._run_limiter_read(self.client.pipeline(), max_jobs).execute(), max_jobs
        )

    async def aget_rate_limit_ttl(self, max_jobs: int | None = None) -> int:
        """Async twin of :meth:`get_rate_limit_ttl`."""
        pipe = self._run_limiter_read(self.aclient.pipeline(), max_jobs)
        return limits.rate_limit_ttl(await pipe.execute(), max_jobs)

    def _run_limiter_read(self, pipe: Any, max_jobs: int | None) -> Any:
        pipe.hget(self.keys["meta"], "max")
        pipe.get(self.keys["limiter"])
        pipe.pttl(self.keys["limiter"])
        return pipe

    def rate_limit(self, ms: int) -> None:
        """Rate-limit the whole queue for ``ms`` ms (BullMQ ``Queue.rateLimit``:
        ``SET limiter 9007199254740991 PX ms``).

        Workers with a limiter (``limiter_max`` or :meth:`set_global_rate_limit`) stop fetching
        until it expires; inside a job, raise :class:`RateLimitError` next so the job goes back
        to wait without spending an attempt.

        Raises:
            ValueError: ``ms`` not a positive int.
        """
        self.client.set(self.keys["limiter"], limits.MANUAL_LIMIT, px=limits.positive_ms(ms))

    async def arate_limit(self, ms: int) -> None:
        """Async twin of :meth:`rate_limit`."""
        await self.aclient.set(self.keys["limiter"], limits.MANUAL_LIMIT, px=limits.positive_ms(ms))

    def remove_rate_limit_key(self) -> int:
        """Delete the limiter key, ending the current window at once; returns keys deleted."""
        return int(self.client.delete(self.keys["limiter"]))

    async def aremove_rate_limit_key(self) -> int:
        """Async twin of :meth:`remove_rate_limit_key`."""
        return int(await self.aclient.delete(self.keys["limiter"]))

    def set_global_concurrency(self, concurrency: int) -> None:
        """At most ``concurrency`` active jobs in this queue over every worker (BullMQ
        ``setGlobalConcurrency``: ``meta.concurrency``).

        Raises:
            ValueError: not an int >= 1.
        """
        self.client.hset(self.keys["meta"], "concurrency", limits.positive_int(concurrency))

    async def aset_global_concurrency(self, concurrency: int) -> None:
        """Async twin of :meth:`set_global_concurrency`."""
        await self.aclient.hset(self.keys["meta"], "concurrency", limits.positive_int(concurrency))

    def remove_global_concurrency(self) -> None:
        """Lift the global concurrency cap (BullMQ ``removeGlobalConcurrency``)."""
        self.client.hdel(self.keys["meta"], "concurrency")

    async def aremove_global_concurrency(self) -> None:
        """Async twin of :meth:`remove_global_concurrency`."""
        await self.aclient.hdel(self.keys["meta"], "concurrency")

    def get_global_concurrency(self) -> int | None:
        """The global concurrency cap, or None when unset (BullMQ ``getGlobalConcurrency``)."""
        return limits.parse_int(self.client.hget(self.keys["meta"], "concurrency"))

    async def aget_global_concurrency(self) -> int | None:
        """Async twin of :meth:`get_global_concurrency`."""
        return limits.parse_int(await self.aclient.hget(self.keys["meta"], "concurrency"))

    def get_deduplication_job_id(self, dedup_id: str) -> str | None:
        """Id of the job owning deduplication id ``dedup_id``, or None (BullMQ
        ``getDeduplicationJobId``: ``GET de:<id>``)."""
        return to_str(self.client.get(self.keys.de(dedup_id)))

    async def aget_deduplication_job_id(self, dedup_id: str) -> str | None:
        """Async twin of :meth:`get_deduplication_job_id`."""
        return to_str(await self.aclient.get(self.keys.de(dedup_id)))

    def remove_deduplication_key(self, dedup_id: str) -> int:
        """Free deduplication id ``dedup_id`` now, so the next add with it creates a job
        (BullMQ ``removeDeduplicationKey``). Returns 1 when a key was deleted, else 0."""
        return int(self.client.delete(self.keys.de(dedup_id)))

    async def aremove_deduplication_key(self, dedup_id: str) -> int:
        """Async twin of :meth:`remove_deduplication_key`."""
        return int(await self.aclient.delete(self.keys.de(dedup_id)))

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

    def drain(self, delayed: bool = False) -> int:
        """Remove all waiting (and, if asked, delayed) jobs; returns how many (BullMQ
        ``drain``). See :func:`~django_bullq.core.calls.operations.drain`."""
        return self._drive(operations.drain(self.keys, delayed))

    async def adrain(self, delayed: bool = False) -> int:
        """Async twin of :meth:`drain`."""
        return await self._adrive(operations.drain(self.keys, delayed))

    def obliterate(self, force: bool = False, count: int = 1000) -> None:
        """Pause, then delete the queue with all its jobs in batches of ``count`` (BullMQ
        ``obliterate``). Raises ActiveJobsError unless ``force``. See
        :func:`~django_bullq.core.calls.operations.obliterate`."""
        self._drive(operations.obliterate(self.keys, force, count))

    async def aobliterate(self, force: bool = False, count: int = 1000) -> None:
        """Async twin of :meth:`obliterate`."""
        await self._adrive(operations.obliterate(self.keys, force, count))

    def get_metrics(self, kind: str, start: int = 0, end: int = -1) -> operations.Metrics:
        """Per-minute ``"completed"``/``"failed"`` counts as a
        :class:`~django_bullq.core.calls.operations.Metrics` (BullMQ ``getMetrics``)."""
        return self._read(operations.get_metrics(self.keys, kind, start, end))

    async def aget_metrics(self, kind: str, start: int = 0, end: int = -1) -> operations.Metrics:
        """Async twin of :meth:`get_metrics`."""
        return await self._aread(operations.get_metrics(self.keys, kind, start, end))

    # --- cancellation (docs/cancellation.md) -----------------------------------------------

    def cancel_job(self, job_id: str, reason: str = "", unrecoverable: bool = False) -> int:
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
        from ..cancel import CONTROL_SUFFIX, cancel_message

        publish = self.client.spublish if self.is_cluster else self.client.publish
        return int(
            publish(self.keys[CONTROL_SUFFIX], cancel_message(job_id, reason, unrecoverable))
        )

    async def acancel_job(self, job_id: str, reason: str = "", unrecoverable: bool = False) -> int:
        """Async twin of :meth:`cancel_job`."""
        from ..cancel import CONTROL_SUFFIX, cancel_message

        publish = self.aclient.spublish if self.is_cluster else self.aclient.publish
        return int(
            await publish(self.keys[CONTROL_SUFFIX], cancel_message(job_id, reason, unrecoverable))
        )
