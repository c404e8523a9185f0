"""A script call as a value, and the drivers of operations that take several round trips.

A :class:`Call` is what a builder of :mod:`~django_bullq.core.calls.builders` returns: the
script's name, its KEYS and ARGV, the job id its error messages name, and how to read its
reply. An operation of several round trips (clean in batches, obliterate, drain) is written
once as a generator that yields calls and receives their replies (httpx's ``auth_flow``
pattern); :func:`drive` runs it with a sync executor and :func:`adrive` with an async one.
Besides calls, a generator may yield a :class:`Read` (plain commands in one pipeline), a
:class:`Command` (one client method call) or a :class:`Batch` (script calls in one write); the
error of a step is thrown into the generator at its ``yield``, so an operation may catch it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass, field
from typing import Any, NamedTuple, TypeVar

R = TypeVar("R")

#: An operation of several round trips, written once; it yields calls (or reads, or commands)
#: and is sent their parsed replies.
Steps = Generator["Step", Any, R]


def _raw(reply: Any) -> Any:
    return reply


class Call[T](NamedTuple):
    """One script call (a named tuple: immutable and cheap to build on the worker's hot path)."""

    #: The script's name (``moveToFinished``).
    script: str
    #: Its KEYS, in the script's order.
    keys: tuple[str, ...]
    #: Its ARGV, in the script's order.
    args: tuple[Any, ...]
    #: The job named in the :class:`~django_bullq.core.errors.ScriptError` of a negative reply.
    job_id: str | None = None
    #: Turns the raw reply into the operation's result.
    parse: Callable[[Any], T] = _raw
    #: Whether a negative integer reply raises; when false, the caller reads the code.
    raise_codes: bool = True
    #: On asyncio, send it through the loop's auto-pipeline, sharing a write with the calls
    #: other coroutines send at the same moment (a single add; its codes always raise).
    pipelined: bool = False


@dataclass(frozen=True, slots=True)
class Read[T]:
    """Plain Redis commands sent in one pipeline, and how to read their replies.

    Attributes:
        commands: each command as its name and arguments (``("LLEN", key)``).
        parse: turns the list of replies, in order, into the result.
        transaction: send them in MULTI/EXEC (atomic) or as a plain pipeline.
        raise_on_error: raise the first error reply; when false, an error reply reaches
            ``parse`` as its exception object (a job key that is not a hash: WRONGTYPE).
    """

    commands: tuple[tuple[Any, ...], ...]
    parse: Callable[[list[Any]], T]
    transaction: bool = True
    raise_on_error: bool = True


@dataclass(frozen=True, slots=True)
class Command[T]:
    """One redis-py client method call, ``client.<method>(*args, **kwargs)``, and its parse.

    For what a :class:`Read` does not fit: a single command sent as it always was (no
    pipeline), a blocking one (``XREAD BLOCK`` must not sit in MULTI/EXEC), one whose reply
    redis-py parses by keyword options (``withscores=True``) or routes by them on a cluster.

    Attributes:
        method: the client method's name (``"hgetall"``).
        args: its positional arguments. kwargs: its keyword arguments.
        parse: turns the method's return value into the result.
    """

    method: str
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    parse: Callable[[Any], T] = _raw


@dataclass(frozen=True, slots=True)
class Batch[T]:
    """Script calls sent in one write, each its own script run.

    BullMQ's ``addBulk``: not atomic as a whole unless ``transaction`` (a flow's nodes go in one
    MULTI/EXEC). On asyncio, calls of one script outside a transaction go through the loop's
    auto-pipeline.

    Attributes:
        calls: the calls, in send order. parse: turns the list of replies, in that order, into
            the result. transaction: wrap them in MULTI/EXEC.
        raise_codes: raise the first negative integer reply (once every reply is in) as its
            :class:`~django_bullq.core.errors.ScriptError`; when false, ``parse`` reads them.
    """

    calls: tuple[Call[Any], ...]
    parse: Callable[[list[Any]], T] = _raw
    transaction: bool = False
    raise_codes: bool = True


#: The steps an operation yields (a script call, a pipeline of plain commands, one client
#: call or a batch of script calls).
Step = Call[Any] | Read[Any] | Command[Any] | Batch[Any]


class _Stepper[R]:
    """The generator protocol of :func:`drive` and :func:`adrive`, written once: the step to
    run next, and where its reply or its error goes."""

    __slots__ = ("done", "step", "steps", "value")
    step: Step
    value: R

    def __init__(self, steps: Steps[R]) -> None:
        self.steps = steps
        self.done = False
        self._advance(steps.send, None)

    def reply(self, reply: Any) -> None:
        """Send ``reply`` into the generator at its ``yield``."""
        self._advance(self.steps.send, reply)

    def fail(self, error: Exception) -> None:
        """Throw ``error`` into the generator at its ``yield`` (it may catch it)."""
        self._advance(self.steps.throw, error)

    def _advance(self, resume: Callable[[Any], Step], what: Any) -> None:
        try:
            self.step = resume(what)
        except StopIteration as stop:
            self.done, self.value = True, stop.value


def drive[R](run: Callable[[Step], Any], steps: Steps[R]) -> R:
    """Run ``steps`` to its end, each step through ``run``; returns the generator's value.

    An exception of a step is thrown into the generator at its ``yield`` (it may catch it);
    uncaught, it propagates from here.
    """
    stepper = _Stepper(steps)
    while not stepper.done:
        try:
            stepper.reply(run(stepper.step))
        except Exception as exc:  # noqa: BLE001 - the operation decides; uncaught, re-raised
            stepper.fail(exc)
    return stepper.value


async def adrive[R](run: Callable[[Step], Awaitable[Any]], steps: Steps[R]) -> R:
    """Async twin of :func:`drive`: each step through the coroutine function ``run``."""
    stepper = _Stepper(steps)
    while not stepper.done:
        try:
            stepper.reply(await run(stepper.step))
        except Exception as exc:  # noqa: BLE001 - see drive
            stepper.fail(exc)
    return stepper.value
