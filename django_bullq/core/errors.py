"""The exception tree of django_bullq's core (no Django imports here).

Every error django_bullq raises as its own is a :class:`BullqError`: the engine's are defined
here, the Django layer's in :mod:`django_bullq.exceptions`. A Lua script's negative return
code becomes a :class:`ScriptError` through one table, :func:`script_error` (BullMQ's shared
codes in :data:`SCRIPT_ERRORS`, a script's own meanings in :data:`SCRIPT_OWN_ERRORS`). The
tree is listed in docs/api.md#errors.
"""

from __future__ import annotations

from asyncio import CancelledError

import redis


class BullqError(Exception):
    """Root of every error raised by django_bullq."""


# --- configuration and connection ----------------------------------------------------------


class ConnectionConfigError(BullqError, ValueError):
    """A Redis URL or client cannot be used (unknown scheme, missing service name...).

    Also importable as ``django_bullq.core.connection.ConnectionConfigError``.
    """


class RedisUnavailableError(BullqError, redis.ConnectionError):
    """Redis could not be reached (refused, timed out, reset) for a call that must not wait,
    or refused a write for want of replicas in sync (``NOREPLICAS``: the write did not happen).

    A subclass of redis-py's ``ConnectionError``, so existing handlers still catch it. The
    message names the server (password hidden) and what was being done. Also importable as
    ``django_bullq.core.connection.RedisUnavailableError``.
    """


class ScriptSourceError(BullqError):
    """A Lua file is missing, includes an unknown file, or includes in a cycle.

    Also importable as ``django_bullq.core.scripts.ScriptSourceError``.
    """


class CapacityError(BullqError):
    """The capacity probe cannot run here (Redis Cluster, INFO disabled, jobs left unprocessed).

    Also importable as ``django_bullq.core.capacity.CapacityError``.
    """


class InvalidNameError(BullqError, ValueError):
    """A queue name, key prefix or custom job id breaks the key layout (see docs/interop.md)."""


class CrossSlotError(BullqError, ValueError):
    """On Redis Cluster, a job would link keys of two hash slots (a parent in another slot).

    Lua scripts may only touch keys of one slot; the fix is one hash tag in the prefix of every
    queue that shares flows (docs/redis-topologies.md).
    """


class SerializationError(BullqError, TypeError):
    """A value cannot be stored as strict JSON (job data, return value, progress)."""


class PayloadTooLargeError(SerializationError):
    """Job data whose JSON is larger than the payload limit (``BULLQ["MAX_PAYLOAD_BYTES"]``)."""


class UnboundJobError(BullqError, RuntimeError):
    """A :class:`~django_bullq.core.job.Job` made without a queue was asked to talk to Redis
    (a ``RuntimeError`` too, as it was before it had a class of its own)."""


class ScriptError(BullqError):
    """A Lua script answered with a negative code.

    Attributes:
        code: the script's return code (BullMQ's error codes, e.g. ``-1`` missing job).
        job_id: the job concerned, when known.
        script: the script name, e.g. ``moveToFinished``.
    """

    code: int = 0

    def __init__(self, code: int, job_id: str | None = None, script: str = "") -> None:
        self.code = code
        self.job_id = job_id
        self.script = script
        super().__init__(f"{self.describe()} (script {script}, job {job_id}, code {code})")

    def describe(self) -> str:
        return "script error"


class JobNotFound(ScriptError):
    code = -1

    def describe(self) -> str:
        return "job does not exist"


class LockMissing(ScriptError):
    code = -2

    def describe(self) -> str:
        return "job lock is missing (the job may have stalled)"


class JobNotInState(ScriptError):
    code = -3

    def describe(self) -> str:
        return "job is not in the expected state"


class PendingDependencies(ScriptError):
    code = -4

    def describe(self) -> str:
        return "job has pending dependencies"


class ParentMissing(ScriptError):
    code = -5

    def describe(self) -> str:
        return "parent job does not exist"


class LockMismatch(ScriptError):
    code = -6

    def describe(self) -> str:
        return "job lock is owned by another worker"


class ParentNotReplaceable(ScriptError):
    code = -7

    def describe(self) -> str:
        return "job already belongs to another existing parent"


class SchedulerIteration(ScriptError):
    code = -8

    def describe(self) -> str:
        return "job is the current iteration of a job scheduler"


class FailedChildren(ScriptError):
    code = -9

    def describe(self) -> str:
        return "job has failed children"


class SchedulerIterationExists(ScriptError):
    code = -10

    def describe(self) -> str:
        return "the job scheduler's next iteration exists already and has started"


class SchedulerSlotsBusy(ScriptError):
    code = -11

    def describe(self) -> str:
        return "32 consecutive slots of the job scheduler hold started iterations"


#: BullMQ's script return codes -> error, the same in every script that answers one.
SCRIPT_ERRORS: dict[int, type[ScriptError]] = {
    cls.code: cls
    for cls in (
        JobNotFound,
        LockMissing,
        JobNotInState,
        PendingDependencies,
        ParentMissing,
        LockMismatch,
        ParentNotReplaceable,
        SchedulerIteration,
        FailedChildren,
        SchedulerIterationExists,
        SchedulerSlotsBusy,
    )
}


class QueueNotPaused(ScriptError):
    """obliterate found the queue running (obliterate-2 answered ``-1``)."""

    code = -1

    def describe(self) -> str:
        return "obliterate needs a paused queue"


class ActiveJobsError(ScriptError):
    """obliterate found active jobs and ``force`` was not set (obliterate-2 answered ``-2``)."""

    code = -2

    def describe(self) -> str:
        return "the queue has active jobs; pass force=True to obliterate anyway"


#: (script, code) -> error, for the scripts whose codes do not mean what :data:`SCRIPT_ERRORS`
#: says (BullMQ's obliterate answers -1 and -2 with its own meanings).
SCRIPT_OWN_ERRORS: dict[tuple[str, int], type[ScriptError]] = {
    ("obliterate", QueueNotPaused.code): QueueNotPaused,
    ("obliterate", ActiveJobsError.code): ActiveJobsError,
}


def script_error(code: int, job_id: str | None, script: str) -> ScriptError:
    """Build the typed :class:`ScriptError` for a negative script return ``code``.

    Args:
        code: the script's reply (< 0). job_id: the job concerned, when known.
        script: the script's name (``moveToFinished``): some scripts give codes their own
            meaning (:data:`SCRIPT_OWN_ERRORS`).

    Returns:
        The error to raise; a plain :class:`ScriptError` for a code no table knows.
    """
    cls = SCRIPT_OWN_ERRORS.get((script, code)) or SCRIPT_ERRORS.get(code, ScriptError)
    err = cls(code, job_id, script)
    err.code = code
    return err


class UnrecoverableError(BullqError):
    """Raise inside a task to fail the job at once, skipping remaining attempts.

    BullMQ name: ``UnrecoverableError`` (the worker checks the class name, so a job failed
    this way is not retried by Node or Python BullMQ workers either).
    """


class WaitingChildrenError(BullqError):
    """Raised by :meth:`Job.move_to_waiting_children` once the job waits for its children.

    The job is already in ``waiting-children``; the worker leaves it there (it runs again when
    its children are done). Let it propagate out of the task. BullMQ name:
    ``WaitingChildrenError``.
    """


class JobTimeoutError(BullqError):
    """:meth:`Job.wait` gave up before the job finished."""


class JobFailedError(BullqError):
    """:meth:`Job.wait` saw the job end in ``failed``.

    ``failed_reason`` holds BullMQ's reason text.
    """

    def __init__(self, job_id: str, failed_reason: str) -> None:
        self.job_id = job_id
        self.failed_reason = failed_reason
        super().__init__(f"job {job_id} failed: {failed_reason}")


class NotEnqueuedError(BullqError):
    """A write that waits for a database commit has no result yet, or never will.

    Raised by ``PendingEnqueue.wait()`` / ``await_result()`` and ``Pending.outcome()`` of the
    Django layer (an ``enqueue``, ``add_flow`` or ``Task.schedule`` made inside
    ``transaction.atomic()``, docs/tasks.md). Not a BullMQ error: BullMQ has no transactions.

    Attributes:
        what: the write, e.g. ``"job 'app.tasks.f' (id 0b6f...)"``. database: the alias whose
            transaction it follows. reason: ``"pending"`` (that transaction has not committed
            yet), ``"rolled back"`` (it rolled back, or its commit stopped before running this
            write: nothing was written), ``"failed"`` (the write after the commit raised;
            ``__cause__`` holds the error) or ``"outbox"`` (committed as an outbox row that
            the commit could not move; ``runworker``'s relay will).
    """

    def __init__(self, what: str, database: str, reason: str) -> None:
        self.what = what
        self.database = database
        self.reason = reason
        super().__init__(f"{what} is not in Redis: {_WHY[reason].format(database=database)}")


_WHY = {
    "pending": "the transaction on database {database!r} has not committed yet "
    "(call this after the atomic block)",
    "rolled back": "the transaction on database {database!r} rolled back (or its commit "
    "stopped before running this write), so nothing was added",
    "failed": "adding it after the commit of database {database!r} failed",
    "outbox": "it committed to the outbox of database {database!r} but was not moved to Redis "
    "yet; runworker's outbox relay will add it",
}


#: The message BullMQ workers recognise a manual rate limit by (Node ``RATE_LIMIT_ERROR``).
RATE_LIMIT_ERROR = "bullmq:rateLimitExceeded"


class RateLimitError(BullqError):
    """Raise inside a task after ``rate_limit(ms)``: the job goes back to wait, no attempt spent.

    BullMQ name: ``RateLimitError`` (``Worker.RateLimitError()``); its message is
    :data:`RATE_LIMIT_ERROR`, which is what Node workers test, so an exception with that message
    is treated the same way.
    """

    def __init__(self, message: str = RATE_LIMIT_ERROR) -> None:
        super().__init__(message)


# --- cancellation (docs/cancellation.md) ---------------------------------------------------


class CancelledJobError(BullqError):
    """A running job was cancelled (``Worker.cancel_job``, ``Queue.cancel_job`` or its timeout).

    The attempt fails with ``failedReason`` = ``str(error)`` (``"cancelled: <reason>"``) and is
    retried like any failure unless ``unrecoverable`` is True.

    Attributes:
        job_id: the cancelled job. reason: the caller's text. unrecoverable: skip retries.
    """

    def __init__(self, job_id: str, reason: str = "", *, unrecoverable: bool = False) -> None:
        self.job_id = job_id
        self.reason = reason
        self.unrecoverable = unrecoverable
        super().__init__(self.describe())

    def describe(self) -> str:
        return f"cancelled: {self.reason}" if self.reason else "cancelled"


class JobTimeoutExceeded(CancelledJobError):
    """A job ran longer than its ``timeout`` option (ms; BullMQ Pro ``timeout``).

    ``failedReason`` is ``"timed out after <timeout_ms> ms"``; retried unless attempts are spent.
    """

    def __init__(self, job_id: str, timeout_ms: int) -> None:
        self.timeout_ms = timeout_ms
        super().__init__(job_id, f"timed out after {timeout_ms} ms")

    def describe(self) -> str:
        return self.reason


class JobAbortedError(BullqError, RuntimeError):
    """The job's code raised ``SystemExit``, ``KeyboardInterrupt`` or ``asyncio.CancelledError``
    (not a cancel of the job): the attempt fails with this instead, retried by its attempts.

    Left to propagate, the first two would stop the worker (and the job, recovered as stalled,
    the next worker), and the last would end the job's slot with the job still active. The
    original is its ``__cause__``; the job's stored ``stacktrace`` says where it was raised.
    """

    def __init__(self, raised: BaseException) -> None:
        what = (
            "itself, not a cancel of the job"
            if isinstance(raised, CancelledError)
            else ("which would stop the worker")
        )
        super().__init__(f"the job raised {raised!r}, {what}; the attempt fails instead")


def contained(raised: BaseException) -> BaseException:
    """``raised`` as a job's attempt may fail with it: an ``Exception`` as it is, anything else
    (``SystemExit``, ``KeyboardInterrupt``, ``asyncio.CancelledError``, ...) as a
    :class:`JobAbortedError` whose ``__cause__`` it is."""
    if isinstance(raised, Exception):
        return raised
    error = JobAbortedError(raised)
    error.__cause__ = raised
    return error
