"""Typed usage of ``@task``, checked by ``mypy --strict`` in ``make test`` (never run).

``Task[P, R]`` keeps the decorated function's parameters ``P`` and return type ``R``: calls,
``enqueue``, ``aenqueue``, ``bind`` and ``node`` are checked against the function.
``assert_type`` fails the check when an inferred type drifts; each ``# type: ignore[code]``
marks a call that must be rejected, and ``warn_unused_ignores`` (part of ``strict``) fails the
check if mypy stops rejecting it.
"""

from __future__ import annotations

from typing import Any, assert_type

from django_bullq import BoundCall, Job, task
from django_bullq.producer.pending import PendingEnqueue
from django_bullq.producer.task import Task


@task
def add(a: int, b: int = 0) -> int:
    return a + b


@task(queue="reports", attempts=3)
async def render(report_id: str, *, pages: list[int]) -> dict[str, int]:
    return {"pages": len(pages)}


def producer() -> None:
    same: Task[..., int] = add
    assert_type(add(1, 2), int)
    assert_type(add.call(1), int)
    assert_type(add.enqueue(1, b=2), Job | PendingEnqueue)
    assert_type(add.using(priority=1)(same(1)), int)
    assert_type(add.node(1), dict[str, Any])
    assert_type(render.enqueue("r1", pages=[1, 2]), Job | PendingEnqueue)
    assert_type(add.enqueue(1).id, str)  # also inside atomic(): the id is given in advance
    add.enqueue(1).wait(timeout=30)  # both have wait(); a PendingEnqueue's works after commit
    assert_type(add.bind(1, b=2), BoundCall)
    assert_type(
        add.enqueue_many([(1,), {"a": 2}, add.bind(3)], chunk_size=500),
        list[Job] | list[PendingEnqueue],
    )

    add.enqueue("1")  # type: ignore[arg-type]
    add.enqueue(1, 2, 3)  # type: ignore[call-arg]
    add.enqueue(1, c=2)  # type: ignore[call-arg]
    add.node(b=2)  # type: ignore[call-arg]
    add.using(priority=1).enqueue("1")  # type: ignore[arg-type]
    render.enqueue("r1", [1])  # type: ignore[call-arg]
    add.bind("1")  # type: ignore[arg-type]
    _text: str = add(1)  # type: ignore[assignment]


async def async_producer() -> None:
    assert_type(await add.aenqueue(1, 2), Job | PendingEnqueue)
    assert_type(await add.aenqueue_many([(1,)]), list[Job] | list[PendingEnqueue])
    assert_type(await render("r1", pages=[1]), dict[str, int])  # R is the coroutine type
    await render.aenqueue(7, pages=[])  # type: ignore[arg-type]
