"""What ``Task.enqueue`` hands back before the job is in Redis, and what ``enqueue_many`` takes.

* :class:`PendingEnqueue`: an enqueue inside ``transaction.atomic()``, waiting for the commit
  (then the job, or why there is none: rolled back, failed, waiting in the outbox);
* :class:`BoundCall`: one call of a task, bound by :meth:`Task.bind` for ``enqueue_many``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..conf import get_queue
from ..core.clients import CLIENT_ERRORS
from ..core.job import Job
from .transaction import Pending


@dataclass(frozen=True, slots=True)
class BoundCall:
    """One call of a task for :meth:`Task.enqueue_many`, made by :meth:`Task.bind`.

    Attributes:
        args: the positional arguments (raw tasks: the one value). kwargs: the keyword ones.
        task_name: the name of the task that bound it ("" for a hand-made one, which any task
            takes); another task's ``enqueue_many`` refuses it.
    """

    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    task_name: str = ""


#: An item of :meth:`Task.enqueue_many`: positional arguments, keyword arguments, or a bound call.
EnqueueItem = tuple[Any, ...] | Mapping[str, Any] | BoundCall


class PendingEnqueue(Pending[Job]):
    """What ``enqueue`` returns inside ``transaction.atomic()`` while it waits for the commit.

    Attributes:
        task_name: the job name. args / kwargs: the call (``args == [data]`` for raw tasks).
        id: the job's id, given in advance (the task's ``job_id`` option, else a UUID v4):
            after the commit the job is in Redis under exactly this id, unless deduplication
            absorbed the add (:attr:`deduplicated`): then, once committed, ``id`` is the id of
            the job that absorbed it.
        deduplicated: True once committed when the add was absorbed by a deduplication id.
        queue_name: the job's queue. database: the alias whose commit it waits for.

    :attr:`job` is the :class:`Job` once the transaction committed and the job was added (None
    before, and forever if the transaction rolled back); :attr:`state` says which.
    """

    id: str  # always known: given in advance by submit()

    def __init__(self, task_name: str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> None:
        super().__init__(f"job {task_name!r}", id="")
        self.task_name = task_name
        self.args = list(args)  # copies: the values as of the call
        self.kwargs = dict(kwargs)
        self.deduplicated = False

    @property
    def state(self) -> str:
        """As :attr:`Pending.state` (never raises); a committed outbox row that ``runworker``'s
        relay has added since (``"outbox"``, or ``"rolled back"`` when the commit stopped before the
        move) is found in Redis under :attr:`id` and turns ``"done"``."""
        state = super().state
        if state in ("outbox", "rolled back") and self.outbox_pk is not None:
            try:
                job = get_queue(self.queue_name).get_job(self.id)
            except CLIENT_ERRORS:  # Redis still down: the row waits for the relay
                return state
            if job is not None:  # relayed: done, without this process's on_added listeners
                self.result, self._state = job, "done"
                return "done"
        return state

    @property
    def job(self) -> Job | None:
        """The :class:`Job` once it is in Redis (relayed from the outbox too), else None."""
        return self.result if self.state == "done" else None

    def get_state(self) -> str:
        """The job's state in Redis (BullMQ ``getState``), as :meth:`Job.get_state`.

        Raises:
            NotEnqueuedError: the job is not in Redis (see :meth:`wait`).
        """
        return self._job_to_wait().get_state()

    async def aget_state(self) -> str:
        """Async twin of :meth:`get_state`."""
        return await self._job_to_wait().aget_state()

    def _finish(self, result: Job) -> None:
        if result.id != self.id:  # a deduplication id absorbed the add: that job is the one
            self.id, self.deduplicated = result.id, True
        super()._finish(result)

    @property
    def enqueued(self) -> bool:
        """True once the job is in Redis."""
        return self.done

    def wait(self, timeout: float | None = 30.0) -> Any:
        """Block until the job finishes; return its return value (as :meth:`Job.wait`).

        Call it after the transaction committed. With the outbox, a job whose move after the
        commit failed (or never ran) is waited for under its id once ``runworker``'s relay
        added it.

        Args:
            timeout: seconds, None for no limit.

        Raises:
            NotEnqueuedError: no job to wait for: ``reason`` ``"pending"`` (the transaction
                has not committed yet: waiting inside it would never end), ``"rolled back"``,
                ``"failed"`` (the add after the commit raised) or ``"outbox"`` (not relayed
                yet). JobFailedError / JobTimeoutError: as :meth:`Job.wait`.
        """
        return self._job_to_wait().wait(timeout)

    async def await_result(self, timeout: float | None = 30.0) -> Any:
        """Async twin of :meth:`wait`."""
        return await self._job_to_wait().await_result(timeout)

    def _job_to_wait(self) -> Job:
        return self.outcome()  # state finds a job the outbox relay added since


#: The keyword arguments of a tuple item: one shared dict, never changed (the job data, and a
#: pending enqueue, copy what they keep).
_NO_KWARGS: dict[str, Any] = {}


def listed(calls: Iterable[EnqueueItem]) -> list[EnqueueItem] | tuple[EnqueueItem, ...]:
    """``calls`` as a sequence (its length sizes the batch), not copied when it is one."""
    return calls if isinstance(calls, list | tuple) else list(calls)


def item_call(name: str, index: int, item: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The ``(args, kwargs)`` of one item of ``enqueue_many``."""
    if isinstance(item, BoundCall):
        if item.task_name and item.task_name != name:
            raise TypeError(
                f"task {name!r}, item {index}: a call bound by task {item.task_name!r} "
                f"(use {item.task_name.rsplit('.', 1)[-1]}.enqueue_many for it)"
            )
        return tuple(item.args), dict(item.kwargs)
    if isinstance(item, tuple):
        return item, _NO_KWARGS
    if isinstance(item, Mapping):
        return (), dict(item)
    raise TypeError(
        f"task {name!r}, item {index}: expected a tuple of positional arguments, a mapping of "
        f"keyword arguments or task.bind(...), got {type(item).__name__}"
    )


__all__ = ["BoundCall", "EnqueueItem", "PendingEnqueue", "item_call", "listed"]
