"""Instrumentation hooks: what tracing, error reporting and metrics integrations see of a job.

Two places, as BullMQ's telemetry interface has them: the producer's add (before its write,
where an instrumentation may put a carrier into the job's stored ``opts``, e.g. ``tm``; and
after it, with the added jobs or the error), and the worker's attempt (its start, and its end
with the outcome). OpenTelemetry (:mod:`django_bullq.core.telemetry`) is built on them; an
error reporter (Sentry) or a metrics exporter can be too.

Register an :class:`Instrumentation` for every queue and worker of the process
(:func:`register`), on one :class:`~django_bullq.core.queue.queue.Queue`
(``queue.add_instrumentation(i)``) or one :class:`~django_bullq.core.worker.Worker`
(``Worker(..., instrumentations=[i])``).
With none registered the add and the attempt cost one ``if`` on an empty tuple: nothing of
this module runs and nothing is allocated.

Hooks run in the producer's thread and on the worker's event loop: they must be quick and
must not block. An exception from a hook is logged (logger ``django_bullq.instrument``) and
ignored: a broken instrumentation never fails an add or a job.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Final

from .calls import Steps

if TYPE_CHECKING:
    from .job import Job

logger = logging.getLogger("django_bullq.instrument")

#: The add operations, BullMQ's span operation names (also ``ADD_BULK``, ``ADD_FLOW``).
ADD: Final = "add"
ADD_BULK: Final = "addBulk"
ADD_FLOW: Final = "addFlow"

#: The attempt outcomes, as constants ``COMPLETED`` ... ``LOST``. The job completed; failed
#: for good; goes back to wait at once for a retry (BullMQ ``retryJob``); is delayed for a
#: retry after its backoff (``moveToDelayed``); moved itself to waiting-children; was rate
#: limited back to wait (no attempt spent); or its end could not be written (lock lost, Redis
#: gone, so the stalled check recovers it).
COMPLETED: Final = "completed"
FAILED: Final = "failed"
RETRY: Final = "retry"
DELAY: Final = "delay"
WAITING_CHILDREN: Final = "waiting-children"
RATE_LIMITED: Final = "rate-limited"
LOST: Final = "lost"


class Instrumentation:
    """Base of an instrumentation: every hook is a no-op; override the ones you need.

    A hook's returned *state* (any object, ``None`` by default) is handed to the matching end
    hook of the same operation or attempt, so one instance serves concurrent adds and jobs.
    """

    def add_started(self, operation: str, queue_name: str, count: int) -> Any:
        """An add begins. ``operation``: ``"add"``, ``"addBulk"`` or ``"addFlow"``;
        ``queue_name``: the queue (a flow's first root's); ``count``: jobs given (trees for a
        flow). Returns the state for :meth:`job_adding` and :meth:`add_ended`."""
        return None

    def job_adding(self, state: Any, queue_name: str, name: str, opts: dict[str, Any]) -> None:
        """One job of the add, validated, before anything is written. ``opts`` is the job's
        stored options as BullMQ keys them (``attempts``, ``jobId``, ``tm``, ``omc``, ...);
        changing it changes what is written (a trace carrier under ``tm``)."""

    def add_ended(self, state: Any, jobs: Sequence[Job], error: BaseException | None) -> None:
        """The add ended: ``jobs`` in the order :meth:`job_adding` saw them (empty when it
        failed), or ``error``, the exception the add raises."""

    def attempt_started(self, worker: Any, job: Job) -> Any:
        """A worker starts an attempt of ``job`` (on the worker's loop, in the task that runs
        it: a context variable set here is seen by the job's code). Returns the state for
        :meth:`attempt_ended`."""
        return None

    def attempt_settling(self, state: Any, worker: Any, job: Job, outcome: str) -> None:
        """The worker is about to write the attempt's end: ``outcome`` is ``"completed"``,
        ``"failed"``, ``"retry"`` or ``"delay"`` (the others end without a write)."""

    def attempt_ended(
        self, state: Any, worker: Any, job: Job, outcome: str, error: BaseException | None
    ) -> None:
        """The attempt ended, its end written to Redis (or not: ``"lost"``). ``outcome``: one
        of ``"completed"``, ``"failed"``, ``"retry"``, ``"delay"``,
        ``"waiting-children"``, ``"rate-limited"``, ``"lost"``; ``error``: what the job
        raised (None when it returned, or was refused without running)."""


class _Registry:
    """The instrumentations of every queue and worker of the process."""

    hooks: tuple[Instrumentation, ...] = ()


#: The global registry, read by the hot paths as ``if own or GLOBAL.hooks`` (an empty tuple
#: is the off switch).
GLOBAL: Final = _Registry()


def register(instrumentation: Instrumentation) -> None:
    """Register ``instrumentation`` for every queue and worker of this process (once)."""
    if instrumentation not in GLOBAL.hooks:
        GLOBAL.hooks = (*GLOBAL.hooks, instrumentation)


def unregister(instrumentation: Instrumentation) -> None:
    """Undo :func:`register` (no error when it was not registered)."""
    GLOBAL.hooks = tuple(hook for hook in GLOBAL.hooks if hook is not instrumentation)


def active(own: Sequence[Instrumentation]) -> tuple[Instrumentation, ...]:
    """``own`` (a queue's or a worker's) then the global ones, each once."""
    return (*own, *(hook for hook in GLOBAL.hooks if hook not in own))


def _safe(hook: Callable[..., Any], *args: Any) -> Any:
    try:
        return hook(*args)
    except Exception:  # a broken instrumentation never fails a job or an add
        logger.exception("instrumentation hook %s failed", getattr(hook, "__qualname__", hook))
        return None


class Producing:
    """One add as the instrumentations see it (made only when some are registered)."""

    __slots__ = ("_hooks", "_states")

    def __init__(
        self, hooks: tuple[Instrumentation, ...], operation: str, queue_name: str, count: int
    ) -> None:
        self._hooks = hooks
        self._states = [_safe(h.add_started, operation, queue_name, count) for h in hooks]

    def carry(self, queue_name: str, name: str, opts: dict[str, Any]) -> None:
        """Each job, before the write (``job_adding``)."""
        for hook, state in zip(self._hooks, self._states, strict=True):
            _safe(hook.job_adding, state, queue_name, name, opts)

    def end(self, jobs: Sequence[Job], error: BaseException | None) -> None:
        """The add's end (``add_ended``), the last registered first."""
        for hook, state in zip(reversed(self._hooks), reversed(self._states), strict=True):
            _safe(hook.add_ended, state, jobs, error)


def producing(
    own: Sequence[Instrumentation], operation: str, queue_name: str, count: int
) -> Producing | None:
    """A :class:`Producing` when ``own`` or the global registry holds instrumentations."""
    if own or GLOBAL.hooks:
        return Producing(active(own), operation, queue_name, count)
    return None


def observe[R](seen: Producing, steps: Steps[R], jobs_of: Callable[[R], Sequence[Job]]) -> Steps[R]:
    """``steps`` (an add's generator of steps), with ``seen`` ended by its result or error."""
    try:
        result = yield from steps
    except BaseException as exc:
        seen.end((), exc)
        raise
    seen.end(jobs_of(result), None)
    return result


class Attempt:
    """One attempt of a job as the instrumentations see it (made only when some are
    registered). :meth:`end` runs once; later calls do nothing."""

    __slots__ = ("_hooks", "_states", "error", "job", "worker")

    def __init__(self, hooks: tuple[Instrumentation, ...], worker: Any, job: Job) -> None:
        self._hooks = hooks
        self.worker = worker
        self.job = job
        #: what the job raised, set by the worker before it settles the attempt
        self.error: BaseException | None = None
        self._states: list[Any] | None = [_safe(h.attempt_started, worker, job) for h in hooks]

    def settling(self, outcome: str) -> None:
        """Before the attempt's end is written (``attempt_settling``)."""
        if self._states is not None:
            for hook, state in zip(self._hooks, self._states, strict=True):
                _safe(hook.attempt_settling, state, self.worker, self.job, outcome)

    def end(self, outcome: str) -> None:
        """The attempt's end (``attempt_ended``), the last registered first."""
        states, self._states = self._states, None
        if states is None:
            return
        for hook, state in zip(reversed(self._hooks), reversed(states), strict=True):
            _safe(hook.attempt_ended, state, self.worker, self.job, outcome, self.error)
