"""A script call as a value, and the drivers of operations that take several round trips.

A :class:`Call` is what a builder of :mod:`~django_bullq.core.calls.builders` returns: the
script's name, its KEYS and ARGV, the job id its error messages name, and how to read its
reply. An operation of several round trips (clean in batches, obliterate, drain) is written
once as a generator that yields calls and receives their replies (httpx's ``auth_flow``
pattern); :func:`drive` runs it with a sync executor and :func:`adrive` with an async one.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass
from typing import Any, Generic, NamedTuple, TypeVar

T = TypeVar("T")
R = TypeVar("R")

#: An operation of several round trips, written once; it yields calls (or reads) and is sent
#: their parsed replies.
Steps = Generator["Call[Any] | Read[Any]", Any, R]


def _raw(reply: Any) -> Any:
    return reply


class Call(NamedTuple, Generic[T]):
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


@dataclass(frozen=True, slots=True)
class Read(Generic[T]):
    """Plain Redis commands sent in one pipeline, and how to read their replies.

    Attributes:
        commands: each command as its name and arguments (``("LLEN", key)``).
        parse: turns the list of replies, in order, into the result.
        transaction: send them in MULTI/EXEC (atomic) or as a plain pipeline.
    """

    commands: tuple[tuple[Any, ...], ...]
    parse: Callable[[list[Any]], T]
    transaction: bool = True


def drive(run: Callable[[Call[Any] | Read[Any]], Any], steps: Steps[R]) -> R:
    """Run ``steps`` to its end, each call through ``run``; returns the generator's value."""
    try:
        call = next(steps)
        while True:
            call = steps.send(run(call))
    except StopIteration as done:
        result: R = done.value
        return result


async def adrive(run: Callable[[Call[Any] | Read[Any]], Awaitable[Any]], steps: Steps[R]) -> R:
    """Async twin of :func:`drive`: each call through the coroutine function ``run``."""
    try:
        call = next(steps)
        while True:
            call = steps.send(await run(call))
    except StopIteration as done:
        result: R = done.value
        return result
