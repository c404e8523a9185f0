"""Job: one BullMQ job hash as typed fields, with the reads and small writes a caller needs."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from . import calls
from .calls import Command, Read, Steps, operations
from .errors import (
    FailedChildren,
    JobFailedError,
    UnboundJobError,
    UnrecoverableError,
    WaitingChildrenError,
    script_error,
)
from .job_hash import COMMON_FIELDS, as_dict, decode_ints, decode_json, decode_rare
from .options import JobOptions, now_ms, options_from_stored, to_delay_ms
from .serialization import dumps, to_str

if TYPE_CHECKING:
    from .cancel import CancelToken
    from .queue import Queue

#: The job states a queue counts and lists (BullMQ's names; ``waiting`` is the wait list).
STATES = ("completed", "failed", "delayed", "prioritized", "active", "waiting", "waiting-children")


@dataclass(eq=False)
class Job:
    """A job as stored in ``<prefix>:<queue>:<id>`` (BullMQ's job hash, protocol §3).

    Times are integer ms since the epoch; ``None`` where the field is absent.

    Attributes:
        id: job id. name: job name. data: decoded ``data`` JSON.
        opts: decoded ``opts`` JSON (BullMQ names). options: the same as :class:`JobOptions`.
        timestamp: creation time ms. delay: ms. priority: 0 none, 1 most urgent.
        processed_on / finished_on: ms. returnvalue: decoded JSON. failed_reason: plain text.
        stacktrace: list of strings. progress: decoded JSON (number or object).
        attempts_made (``atm``), attempts_started (``ats``), stalled_counter (``stc``).
        processed_by (``pb``), parent_key, parent (decoded JSON), repeat_job_key (``rjk``),
        deduplication_id (``deid``), deferred_failure (``defa``).
        corrupt: a readable reason when the hash could not be decoded (missing name, invalid
            JSON); the worker fails such a job with this reason instead of running it.
    """

    queue: Queue | None
    id: str
    name: str = ""
    data: Any = None
    opts: dict[str, Any] = field(default_factory=dict)
    timestamp: int = 0
    delay: int = 0
    priority: int = 0
    processed_on: int | None = None
    finished_on: int | None = None
    returnvalue: Any = None
    failed_reason: str | None = None
    stacktrace: list[str] = field(default_factory=list)
    progress: Any = 0
    attempts_made: int = 0
    attempts_started: int = 0
    stalled_counter: int = 0
    processed_by: str | None = None
    parent_key: str | None = None
    parent: dict[str, Any] | None = None
    repeat_job_key: str | None = None
    deduplication_id: str | None = None
    deferred_failure: str | None = None
    corrupt: str | None = None
    raw: dict[str, str] = field(default_factory=dict, repr=False)
    token: str | None = field(default=None, repr=False)
    cancel_token: CancelToken | None = field(default=None, repr=False)

    @classmethod
    def added(
        cls,
        queue: Queue | None,
        job_id: str,
        name: str,
        data: Any,
        opts: dict[str, Any],
        meta: tuple[int, int, int],
    ) -> Job:
        """The Job a producer just added (``meta``: its timestamp ms, delay ms, priority):
        ``Job(queue=..., id=..., ...)`` built as :meth:`from_hash` builds one, without the
        28-argument ``__init__`` (a bulk add makes one per job)."""
        job = object.__new__(cls)
        job.stacktrace = []  # the fields of _FRESH other than opts, set as attributes: an
        job.raw = {}  # instance dict would be one more object for the GC to track per job
        job.queue = queue
        job.id = job_id
        job.name = name
        job.data = data
        job.opts = opts
        job.timestamp, job.delay, job.priority = meta
        return job

    @classmethod
    def from_hash(cls, queue: Queue | None, job_id: str, raw: Any) -> Job:
        """Build a Job from ``HGETALL`` output (a dict or a flat list, bytes or str).

        Never raises for bad content: problems are collected in :attr:`corrupt`. Only the
        fields the hash holds are decoded (the worker decodes every job it fetches). ``raw``
        may also be the error reply of an ``HGETALL`` on a key that is not a hash
        (WRONGTYPE): the Job then has no fields, and :attr:`corrupt` says so. Any other
        error reply (an ACL's NOPERM, say) is raised.
        """
        if isinstance(raw, Exception):
            if not str(raw).startswith("WRONGTYPE"):
                raise raw
            return cls.from_hash(queue, job_id, {"name": ""}).unreadable(raw)
        fields = as_dict(raw)
        # Built without the 28-argument __init__: the unset fields read their dataclass
        # defaults from the class, the mutable ones (_FRESH) get their own objects here.
        job = object.__new__(cls)
        state = job.__dict__
        for attr, factory in _FRESH:
            state[attr] = factory()
        state["queue"] = queue
        state["id"] = job_id
        state["raw"] = fields
        name = fields.get("name")
        state["name"] = name or ""
        problems = decode_json(state, fields)
        if name is None:
            problems.insert(0, "job hash has no 'name' field")
        decode_ints(state, fields)
        if not fields.keys() <= COMMON_FIELDS:  # a waiting or just-fetched job skips the rest
            decode_rare(state, fields)
        if problems:
            state["corrupt"] = "; ".join(problems)
        return job

    def unreadable(self, error: Exception) -> Job:
        """This job marked as one whose key could not be read as a hash (``error``: the
        reply's exception); returns self."""
        self.raw = {}
        self.corrupt = f"the job key is not a hash ({error})"
        return self

    @property
    def options(self) -> JobOptions:
        """The stored ``opts`` as :class:`JobOptions`."""
        return options_from_stored(self.opts)

    @property
    def attempts(self) -> int:
        """``opts.attempts`` (0 when absent or malformed)."""
        value = self.opts.get("attempts", 0)
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    @property
    def cancelled(self) -> bool:
        """True once the worker running this job was asked to cancel it (or it timed out).

        Sync tasks poll this (docs/cancellation.md); always False outside a worker.
        """
        return self.cancel_token is not None and self.cancel_token.cancelled

    def raise_if_cancelled(self) -> None:
        """Raise :class:`~django_bullq.core.errors.CancelledJobError` (or
        :class:`~django_bullq.core.errors.JobTimeoutExceeded`) if this job was cancelled."""
        if self.cancel_token is not None:
            self.cancel_token.raise_if_cancelled()

    def _queue(self) -> Queue:
        if self.queue is None:
            raise UnboundJobError("this Job is not bound to a Queue")
        return self.queue

    # --- reads -----------------------------------------------------------------------------

    def refresh(self) -> Job:
        """Re-read the hash from Redis. Returns self. Raises JobNotFound if it is gone."""
        return self._queue()._drive(self._refresh())

    async def arefresh(self) -> Job:
        """Async twin of :meth:`refresh`."""
        return await self._queue()._adrive(self._refresh())

    def _refresh(self) -> Steps[Job]:
        fresh: Job = yield self._queue()._job_read(self.id, required=True)
        for name in self.__dataclass_fields__:
            if name not in ("queue", "token", "cancel_token"):
                setattr(self, name, getattr(fresh, name))
        return self

    def get_state(self) -> str:
        """BullMQ state name: one of :data:`STATES` or ``"unknown"``."""
        return self._queue().get_job_state(self.id)

    async def aget_state(self) -> str:
        """Async twin of :meth:`get_state`."""
        return await self._queue().aget_job_state(self.id)

    def get_logs(self, start: int = 0, end: int = -1) -> list[str]:
        """Log lines (oldest first) between list indexes ``start`` and ``end`` inclusive."""
        return self._queue()._command(self._logs_command(start, end))

    async def aget_logs(self, start: int = 0, end: int = -1) -> list[str]:
        """Async twin of :meth:`get_logs`."""
        return await self._queue()._acommand(self._logs_command(start, end))

    def _logs_command(self, start: int, end: int) -> Command[list[str]]:
        key = self._queue().keys.job(self.id) + ":logs"
        return Command(
            "lrange", (key, start, end), parse=lambda lines: [to_str(x) or "" for x in lines]
        )

    # --- writes ----------------------------------------------------------------------------

    def update_progress(self, progress: Any) -> None:
        """Store progress (a number or a JSON object) and emit BullMQ's ``progress`` event.

        Raises:
            SerializationError: progress is not JSON. JobNotFound: the job is gone.
        """
        self._queue()._drive(self._json_write("progress", progress))

    async def aupdate_progress(self, progress: Any) -> None:
        """Async twin of :meth:`update_progress`."""
        await self._queue()._adrive(self._json_write("progress", progress))

    def _json_write(self, name: str, value: Any) -> Steps[None]:
        """Store ``value`` as JSON in the hash field ``name`` (``progress``, by its script with
        its event, or ``data``), then on this job. SerializationError when it is not JSON."""
        text = dumps(value, f"{name} of job {self.id}")
        keys = self._queue().keys
        call = (
            calls.update_progress(keys, job_id=self.id, progress=text)
            if name == "progress"
            else calls.update_data(keys, self.id, data=text)
        )
        return self._write(call, **{name: value})

    def _write(self, call: calls.Call[Any], **fields: Any) -> Steps[None]:
        """Run ``call``, then set ``fields`` on this job (only once the write succeeded)."""
        yield call
        for name, value in fields.items():
            setattr(self, name, value)

    def log(self, line: str) -> int:
        """Append a log line (BullMQ ``addLog``). Returns the number of lines kept."""
        return self._queue()._run(self._log_call(line))

    async def alog(self, line: str) -> int:
        """Async twin of :meth:`log`."""
        return await self._queue()._arun(self._log_call(line))

    def _log_call(self, line: str) -> calls.Call[int]:
        keep = self.opts.get("kl") or 0
        return calls.add_log(self._queue().keys, job_id=self.id, line=str(line), keep_logs=keep)

    def remove(self) -> bool:
        """Delete the job (BullMQ ``remove``). Returns False when a worker holds its lock."""
        return self._queue().remove(self.id)

    async def aremove(self) -> bool:
        """Async twin of :meth:`remove`."""
        return await self._queue().aremove(self.id)

    def promote(self) -> None:
        """Move this delayed job to wait now (BullMQ ``promote``). Raises JobNotInState."""
        self._queue().promote(self.id)

    async def apromote(self) -> None:
        """Async twin of :meth:`promote`."""
        await self._queue().apromote(self.id)

    # --- waiting for the outcome -----------------------------------------------------------

    def wait(self, timeout: float | None = 30.0) -> Any:
        """Block until the job finishes; return its return value (BullMQ ``waitUntilFinished``).

        Wakes on the queue's events stream, so it returns as soon as the job is done; it also
        works for jobs removed when they finished (``remove_on_complete``/``remove_on_fail``).

        Args:
            timeout: seconds, None for no limit.

        Returns:
            The job's return value (decoded JSON).

        Raises:
            JobFailedError: the job ended in failed (``failed_reason`` holds the reason).
            JobTimeoutError: ``timeout`` elapsed first. JobNotFound: the job does not exist.
        """
        return self._settle(self._queue().wait_until_finished(self.id, timeout))

    async def await_result(self, timeout: float | None = 30.0) -> Any:
        """Async twin of :meth:`wait`."""
        return self._settle(await self._queue().await_finished(self.id, timeout))

    def _settle(self, outcome: tuple[str, Any]) -> Any:
        state, value = outcome
        if state == "failed":
            self.failed_reason = value
            raise JobFailedError(self.id, value or "")
        self.returnvalue = value
        return value

    # --- flows: a parent's children (docs/flows.md; reads in core/calls/operations.py) ---

    def get_dependencies(self) -> dict[str, Any]:
        """This parent's children by outcome (BullMQ ``getDependencies``).

        Returns:
            ``{"processed": {childKey: returnvalue}, "unprocessed": [childKey],
            "ignored": {childKey: failedReason}, "failed": [childKey], "all": [childKey]}``;
            child keys are full ``<prefix>:<queue>:<id>``. ``ignored`` holds children failed
            with ignore_dependency / continue_parent, ``failed`` those with fail_parent; a
            child without policy that failed stays in ``unprocessed`` (BullMQ's default).
        """
        return self._queue()._read(self._dependencies())

    async def aget_dependencies(self) -> dict[str, Any]:
        """Async twin of :meth:`get_dependencies`."""
        return await self._queue()._aread(self._dependencies())

    def _dependencies(self) -> Read[dict[str, Any]]:
        return operations.dependencies(self._queue().keys, self.id)

    def get_dependencies_count(self) -> dict[str, int]:
        """``{"processed", "unprocessed", "ignored", "failed"}`` counts of the children."""
        return operations.count_dependencies(self.get_dependencies())

    async def aget_dependencies_count(self) -> dict[str, int]:
        """Async twin of :meth:`get_dependencies_count`."""
        return operations.count_dependencies(await self.aget_dependencies())

    def get_children_values(self) -> dict[str, Any]:
        """``{childKey: returnvalue}`` of the completed children (BullMQ ``getChildrenValues``)."""
        return self._queue()._read(self._children_values())

    async def aget_children_values(self) -> dict[str, Any]:
        """Async twin of :meth:`get_children_values`."""
        return await self._queue()._aread(self._children_values())

    def _children_values(self) -> Read[dict[str, Any]]:
        deps = self._dependencies()
        return Read(deps.commands, lambda replies: dict(deps.parse(replies)["processed"]))

    def move_to_waiting_children(self, child_key: str | None = None) -> bool:
        """Inside a task: wait for the children this job added (step jobs).

        Args:
            child_key: wait only while this child (full key) is pending; None: any child.

        Returns:
            False when no child is pending: the job stays active and the task goes on.

        Raises:
            WaitingChildrenError: the job now waits in ``waiting-children`` (its lock is
                released); let it propagate, the worker leaves the job alone and the task runs
                again once the children are done.
            UnrecoverableError: a child with ``fail_parent_on_failure`` failed already.
            ScriptError: the job is not active under this worker's lock.
        """
        return self._moved(*self._queue()._drive(self._wait_children(child_key)))

    async def amove_to_waiting_children(self, child_key: str | None = None) -> bool:
        """Async twin of :meth:`move_to_waiting_children`."""
        return self._moved(*await self._queue()._adrive(self._wait_children(child_key)))

    def _wait_children(self, child_key: str | None) -> Steps[tuple[int, list[str]]]:
        keys = self._queue().keys
        return operations.move_to_waiting_children(
            keys, self.id, self.token or "0", child_key or ""
        )

    def _moved(self, code: int, unsuccessful: list[str]) -> bool:
        if code == 1:
            return False
        if code == FailedChildren.code:
            reason = self.deferred_failure or (
                f"child {unsuccessful[0]} failed" if unsuccessful else "job has failed children"
            )
            raise UnrecoverableError(reason)
        if code < 0:
            raise script_error(code, self.id, "moveToWaitingChildren")
        self.token = None  # the lock is gone: the worker's lock renewal must skip this job
        raise WaitingChildrenError(f"job {self.id} waits for its children")

    # --- maintenance (django_bullq.core.calls) --------------------------------------------

    def retry(
        self,
        state: str = "failed",
        *,
        reset_attempts_made: bool = False,
        reset_attempts_started: bool = False,
    ) -> None:
        """Run this failed/completed job again (BullMQ ``job.retry``; ``reprocessJob-9``).

        Raises:
            ValueError: ``state`` is not failed or completed. JobNotFound: the job is gone.
            JobNotInState: it is not in ``state``.
        """
        self._queue()._run(
            self._retry_call(state, made=reset_attempts_made, started=reset_attempts_started)
        )

    async def aretry(
        self,
        state: str = "failed",
        *,
        reset_attempts_made: bool = False,
        reset_attempts_started: bool = False,
    ) -> None:
        """Async twin of :meth:`retry`."""
        await self._queue()._arun(
            self._retry_call(state, made=reset_attempts_made, started=reset_attempts_started)
        )

    def _retry_call(self, state: str, *, made: bool, started: bool) -> calls.Call[Any]:
        keys = self._queue().keys
        return operations.reprocess_job(
            keys, self.id, state, reset_attempts_made=made, reset_attempts_started=started
        )

    def change_priority(self, priority: int, *, lifo: bool = False) -> None:
        """New priority (0 none, 1 most urgent); a waiting job is re-queued under it (BullMQ
        ``changePriority``).

        Raises:
            ValueError: priority outside 0..2_097_151. JobNotFound: the job is gone.
        """
        self._queue()._drive(
            self._write(self._priority_call(priority, lifo=lifo), priority=priority)
        )

    async def achange_priority(self, priority: int, *, lifo: bool = False) -> None:
        """Async twin of :meth:`change_priority`."""
        await self._queue()._adrive(
            self._write(self._priority_call(priority, lifo=lifo), priority=priority)
        )

    def _priority_call(self, priority: int, *, lifo: bool) -> calls.Call[Any]:
        priority = operations.check_priority(priority)
        return calls.change_priority(
            self._queue().keys, job_id=self.id, priority=priority, lifo=lifo
        )

    def change_delay(self, delay_ms: Any) -> None:
        """Run this delayed job ``delay_ms`` ms (or a timedelta) from now (BullMQ
        ``changeDelay``).

        Raises:
            JobNotFound: the job is gone. JobNotInState: it is not delayed. ValueError: delay < 0.
        """
        self._queue()._drive(self._delay_write(delay_ms))

    async def achange_delay(self, delay_ms: Any) -> None:
        """Async twin of :meth:`change_delay`."""
        await self._queue()._adrive(self._delay_write(delay_ms))

    def _delay_write(self, delay_ms: Any) -> Steps[None]:
        delay = to_delay_ms(delay_ms)
        call = calls.change_delay(self._queue().keys, job_id=self.id, now=now_ms(), delay=delay)
        return self._write(call, delay=delay)

    def update_data(self, data: Any) -> None:
        """Replace the job's data with a JSON value (BullMQ ``updateData``); raises
        SerializationError when it is not JSON, JobNotFound when the job is gone."""
        self._queue()._drive(self._json_write("data", data))

    async def aupdate_data(self, data: Any) -> None:
        """Async twin of :meth:`update_data`."""
        await self._queue()._adrive(self._json_write("data", data))


#: Dataclass fields of Job with a default_factory: each decoded Job gets its own object.
_FRESH = tuple(
    (f.name, f.default_factory)
    for f in dataclasses.fields(Job)
    if f.default_factory is not dataclasses.MISSING
)
