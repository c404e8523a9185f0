"""Bulk enqueue on tasks (issue 14 item 3): ``Task.enqueue_many`` / ``aenqueue_many`` and
``Task.bind``; one round trip per chunk, ``.using()`` options, on-commit and the outbox, and
every call checked before anything is written."""

from __future__ import annotations

import gc
from typing import Any, cast

import pytest
from django.db import transaction

from django_bullq import BoundCall
from django_bullq.conf import get_queue
from django_bullq.core.errors import NotEnqueuedError, PayloadTooLargeError, SerializationError
from django_bullq.core.job import Job
from django_bullq.models import OutboxJob
from django_bullq.producer.pending import PendingEnqueue
from django_bullq.producer.relay import relay
from tests.support.redis_server import free_port
from tests.testapp import tasks as sample


@pytest.fixture
def outbox(settings: Any) -> None:
    settings.BULLQ = {
        **settings.BULLQ,
        "OUTBOX": {"ENABLED": True, "DATABASES": ["default"], "POLL_INTERVAL": 0.1},
    }


def pendings_of(result: list[Job] | list[PendingEnqueue]) -> list[PendingEnqueue]:
    assert all(isinstance(p, PendingEnqueue) for p in result)
    return cast("list[PendingEnqueue]", result)


def jobs_of(result: list[Job] | list[PendingEnqueue]) -> list[Job]:
    assert all(isinstance(job, Job) for job in result)
    return cast("list[Job]", result)


def stored_data(queue_name: str, jobs: list[Any]) -> list[Any]:
    queue = get_queue(queue_name)
    return [queue.get_job(job.id).data for job in jobs]  # type: ignore[union-attr]


def test_enqueue_many_takes_tuples_mappings_and_bound_calls(queue_name: str) -> None:
    add = sample.add.using(queue=queue_name)
    jobs = add.enqueue_many([(1,), (2, 3), {"a": 4, "b": 5}, add.bind(6, b=7)])
    assert all(isinstance(job, Job) for job in jobs)
    assert stored_data(queue_name, jobs) == [
        {"args": [1], "kwargs": {}},
        {"args": [2, 3], "kwargs": {}},
        {"args": [], "kwargs": {"a": 4, "b": 5}},
        {"args": [6], "kwargs": {"b": 7}},
    ]
    assert get_queue(queue_name).count() == 4
    assert add.bind(1, b=2) == BoundCall((1,), {"b": 2}, add.name)


def test_enqueue_many_is_one_round_trip_per_chunk(queue_name: str, round_trips: list[int]) -> None:
    add = sample.add.using(queue=queue_name)
    add.enqueue(0)  # connection made, scripts loaded
    before = round_trips[0]
    jobs = add.enqueue_many([(i,) for i in range(7)], chunk_size=3)
    assert round_trips[0] - before == 3
    assert [data["args"] for data in stored_data(queue_name, jobs)] == [[i] for i in range(7)]
    before = round_trips[0]
    add.enqueue_many([(i,) for i in range(1000)])
    assert round_trips[0] - before == 1


def test_enqueue_many_honours_using_options(queue_name: str) -> None:
    jobs = jobs_of(
        sample.configured.using(queue=queue_name, attempts=5).enqueue_many([("x",), ("y",)])
    )
    assert [job.opts["attempts"] for job in jobs] == [5, 5]
    assert [job.opts["priority"] for job in jobs] == [5, 5]
    assert get_queue(queue_name).get_job_counts("prioritized")["prioritized"] == 2


def test_raw_task_enqueue_many(queue_name: str) -> None:
    email = sample.email.using(queue=queue_name)
    jobs = email.enqueue_many([({"to": "a"},), email.bind({"to": "b"})])
    assert stored_data(queue_name, jobs) == [{"to": "a"}, {"to": "b"}]
    with pytest.raises(TypeError, match=r"item 1.*exactly one value"):
        email.enqueue_many([({"to": "a"},), ({"to": "b"}, 2)])


@pytest.mark.parametrize(
    ("items", "error", "named"),
    [
        ([(1,), (2,), (object(),)], SerializationError, "item 2"),
        ([(1,), {"nope": 1}], TypeError, "item 1"),
        ([(1,), (1, 2, 3)], TypeError, "item 1"),
        ([(1,), [1]], TypeError, "item 1"),
        ([(1,), {"a": 1, "b": float("nan")}], SerializationError, "item 1"),
    ],
)
def test_a_bad_item_names_the_task_and_index_and_writes_nothing(
    queue_name: str, items: list[Any], error: type[Exception], named: str
) -> None:
    with pytest.raises(error) as info:
        sample.add.using(queue=queue_name).enqueue_many(items, chunk_size=1)
    assert named in str(info.value)
    assert "'tests.testapp.tasks.add'" in str(info.value)
    assert get_queue(queue_name).count() == 0


def test_an_oversized_item_names_its_index_and_writes_nothing(
    settings: Any, queue_name: str
) -> None:
    settings.BULLQ = {**settings.BULLQ, "MAX_PAYLOAD_BYTES": 1000}
    with pytest.raises(PayloadTooLargeError) as info:
        sample.add.using(queue=queue_name).enqueue_many([(1,), ("x" * 2000,), (3,)])
    assert "'tests.testapp.tasks.add' (item 1 of the bulk add)" in str(info.value)
    assert "over the payload limit of 1000 bytes" in str(info.value)
    assert get_queue(queue_name).count() == 0


def test_one_job_id_for_many_items_is_refused(queue_name: str) -> None:
    # every item would get the same custom id: the first added, the rest absorbed by it
    add = sample.add.using(queue=queue_name, job_id="report-1")
    with pytest.raises(ValueError, match=r"job_id 'report-1'.*2 items"):
        add.enqueue_many([(1,), (2,)])
    assert get_queue(queue_name).count() == 0
    (job,) = jobs_of(add.enqueue_many([(1,)]))
    assert job.id == "report-1"


@pytest.mark.parametrize(("args", "kwargs"), [((1, 2, 3), {}), ((1,), {"cc": 3}), ((), {"b": 1})])
async def test_a_single_enqueue_checks_the_signature_as_enqueue_many_does(
    queue_name: str, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    """Trial finding: ``add.enqueue(1, 2, 3)`` was written and failed in the worker, while the
    same call through ``enqueue_many`` raised at once."""
    task_ = sample.add.using(queue=queue_name)
    with pytest.raises(TypeError, match="task 'tests.testapp.tasks.add'"):
        task_.enqueue(*args, **kwargs)
    with pytest.raises(TypeError, match="task 'tests.testapp.tasks.add'"):
        await task_.aenqueue(*args, **kwargs)
    assert get_queue(queue_name).count() == 0
    task_.enqueue(1, b=2)  # a good call of each shape still goes, and is checked once
    task_.enqueue(3, b=4)
    assert get_queue(queue_name).count() == 2


def test_a_call_bound_by_another_task_is_refused(queue_name: str) -> None:
    """Trial finding: ``add.enqueue_many([async_add.bind(1)])`` made an ``add`` job."""
    with pytest.raises(TypeError, match=r"item 1: a call bound by task 'tests.testapp.tasks"):
        sample.add.using(queue=queue_name).enqueue_many(
            [sample.add.bind(1), sample.async_add.bind(1, 2)]
        )
    assert get_queue(queue_name).count() == 0
    assert len(sample.add.using(queue=queue_name).enqueue_many([BoundCall((1,))])) == 1


def test_a_bad_chunk_size_is_refused(queue_name: str) -> None:
    with pytest.raises(ValueError, match="chunk_size"):
        sample.add.using(queue=queue_name).enqueue_many([(1,)], chunk_size=0)


def test_enqueue_many_of_nothing(queue_name: str) -> None:
    assert sample.add.using(queue=queue_name).enqueue_many([]) == []


async def test_aenqueue_many(queue_name: str) -> None:
    add = sample.add.using(queue=queue_name)
    jobs = await add.aenqueue_many([(i,) for i in range(5)] + [add.bind(5, b=1)], chunk_size=2)
    assert all(isinstance(job, Job) for job in jobs)
    stored = [(await get_queue(queue_name).aget_job(job.id)).data for job in jobs]  # type: ignore[union-attr]
    assert stored[-1] == {"args": [5], "kwargs": {"b": 1}}
    assert [data["args"][0] for data in stored] == list(range(6))


# --- on commit ---------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_enqueue_many_in_atomic_is_written_once_after_the_commit(
    queue_name: str, round_trips: list[int]
) -> None:
    queue = get_queue(queue_name)
    add = sample.add.using(queue=queue_name)
    add.enqueue(0)
    with transaction.atomic():
        pendings = pendings_of(add.enqueue_many([(i,) for i in range(5)], chunk_size=10))
        assert all(isinstance(p, PendingEnqueue) and p.state == "pending" for p in pendings)
        assert queue.count() == 1
        before = round_trips[0]
    assert round_trips[0] - before == 1  # the whole batch in one write after the commit
    assert [p.state for p in pendings] == ["done"] * 5
    assert [p.job.id for p in pendings] == [p.id for p in pendings]  # type: ignore[union-attr]
    assert [queue.get_job(p.id).data["args"] for p in pendings] == [[i] for i in range(5)]  # type: ignore[union-attr]


@pytest.mark.django_db(transaction=True)
def test_enqueue_many_rolled_back_writes_nothing(queue_name: str) -> None:
    with pytest.raises(ZeroDivisionError), transaction.atomic():
        pendings = pendings_of(sample.add.using(queue=queue_name).enqueue_many([(1,), (2,)]))
        1 / 0  # noqa: B018
    assert [p.state for p in pendings] == ["rolled back"] * 2
    assert get_queue(queue_name).count() == 0


@pytest.mark.django_db(transaction=True)
def test_a_bad_item_in_atomic_fails_at_the_call(queue_name: str) -> None:
    with transaction.atomic(), pytest.raises(SerializationError, match="item 1"):
        sample.add.using(queue=queue_name).enqueue_many([(1,), (object(),)])
    assert get_queue(queue_name).count() == 0


# --- the outbox --------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_enqueue_many_with_the_outbox_stores_rows_and_moves_them_after_the_commit(
    outbox: Any, queue_name: str
) -> None:
    queue = get_queue(queue_name)
    with transaction.atomic():
        pendings = pendings_of(
            sample.add.using(queue=queue_name).enqueue_many([(i,) for i in range(4)])
        )
        assert OutboxJob.objects.filter(queue=queue_name).count() == 4
        assert queue.count() == 0
    assert OutboxJob.objects.filter(queue=queue_name).count() == 0
    assert [p.state for p in pendings] == ["done"] * 4
    assert [queue.get_job(p.id).data["args"] for p in pendings] == [[i] for i in range(4)]  # type: ignore[union-attr]


@pytest.mark.django_db(transaction=True)
def test_enqueue_many_outbox_rows_left_by_a_crash_are_relayed(outbox: Any, queue_name: str) -> None:
    queue = get_queue(queue_name)

    def crash() -> None:
        raise RuntimeError("process died")

    with pytest.raises(RuntimeError), transaction.atomic():
        transaction.on_commit(crash)  # runs first: the move after it never runs
        pendings = pendings_of(
            sample.add.using(queue=queue_name).enqueue_many([(i,) for i in range(3)])
        )
    assert OutboxJob.objects.filter(queue=queue_name).count() == 3
    assert queue.count() == 0
    assert relay("default") == 3
    assert sorted(queue.get_job(p.id).data["args"][0] for p in pendings) == [0, 1, 2]  # type: ignore[union-attr]
    assert [p.state for p in pendings] == ["done"] * 3


@pytest.mark.django_db(transaction=True)
def test_pending_state_and_wait_with_redis_down_say_outbox(
    outbox: Any, queue_name: str, settings: Any
) -> None:
    """Trial finding: with Redis down, ``state`` and ``wait()`` of a committed outbox row
    raised redis-py's ConnectionError instead of "outbox" / NotEnqueuedError."""
    down = f"redis://127.0.0.1:{free_port()}/0"
    settings.BULLQ = {**settings.BULLQ, "CONNECTIONS": {"default": {"URL": down}}}
    with transaction.atomic():
        pendings = pendings_of(sample.add.using(queue=queue_name).enqueue_many([(7,), (8,)]))
    assert [p.state for p in pendings] == ["outbox", "outbox"]
    with pytest.raises(NotEnqueuedError) as info:
        pendings[0].wait(1)
    assert info.value.reason == "outbox"
    assert OutboxJob.objects.filter(queue=queue_name).count() == 2


@pytest.mark.django_db(transaction=True)
def test_enqueue_many_outbox_rollback_leaves_no_rows(outbox: Any, queue_name: str) -> None:
    with pytest.raises(ZeroDivisionError), transaction.atomic():
        sample.add.using(queue=queue_name).enqueue_many([(1,), (2,)])
        1 / 0  # noqa: B018
    assert OutboxJob.objects.filter(queue=queue_name).count() == 0
    assert get_queue(queue_name).count() == 0


@pytest.mark.django_db(transaction=True)
def test_pendings_carry_each_call_as_made_raw_tasks_their_one_value(queue_name: str) -> None:
    """Each pending is made from its add's data when the add waits for the commit (no object
    per add is kept for it): its ``args`` / ``kwargs`` are the call's (shallow copies, as
    before)."""
    add = sample.add.using(queue=queue_name)
    email = sample.email.using(queue=queue_name)
    b = [2]
    with transaction.atomic():
        one = add.enqueue(1, b=b)
        many = pendings_of(add.enqueue_many([(3,), {"a": 4, "b": 5}, add.bind(6, b=7)]))
        raw = email.enqueue({"to": "a"})
        raw_many = pendings_of(email.enqueue_many([({"to": "b"},)]))
    assert isinstance(one, PendingEnqueue) and isinstance(raw, PendingEnqueue)
    assert (one.task_name, one.args, one.kwargs) == (add.name, [1], {"b": [2]})
    assert [(p.args, p.kwargs) for p in many] == [
        ([3], {}),
        ([], {"a": 4, "b": 5}),
        ([6], {"b": 7}),
    ]
    assert (raw.task_name, raw.args, raw.kwargs) == (email.name, [{"to": "a"}], {})
    assert [(p.args, p.kwargs) for p in raw_many] == [([{"to": "b"}], {})]
    assert [p.state for p in (one, *many, raw, *raw_many)] == ["done"] * 6


def test_enqueue_many_of_many_calls_runs_no_collection(queue_name: str) -> None:
    """The cyclic GC is paused while the batch is built, listed for ``add_bulk`` and sent
    (core/gc_pause.py): without the pauses, 5,000 calls set off 16 collections or more, a
    third of the producer's CPU at 50,000."""
    calls = [(i, i) for i in range(5000)]
    started: list[int] = []

    def seen(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            started.append(info["generation"])

    gc.callbacks.append(seen)
    try:
        jobs = jobs_of(sample.add.using(queue=queue_name).enqueue_many(calls))
    finally:
        gc.callbacks.remove(seen)
    assert len(started) <= 3  # at most one as each of the three pauses begins
    assert gc.isenabled()
    assert len(jobs) == 5000 and jobs[4999].data == {"args": [4999, 4999], "kwargs": {}}


def test_a_bad_item_deep_in_a_big_batch_restores_the_collector(queue_name: str) -> None:
    calls: list[Any] = [(i,) for i in range(5000)]
    calls[4000] = (1, 2, 3)
    with pytest.raises(TypeError, match=r"'tests\.testapp\.tasks\.add', item 4000: too many"):
        sample.add.using(queue=queue_name).enqueue_many(calls)
    assert gc.isenabled()
    assert get_queue(queue_name).count() == 0


def test_enqueue_many_takes_a_generator_of_calls(queue_name: str) -> None:
    jobs = jobs_of(sample.add.using(queue=queue_name).enqueue_many((i,) for i in range(3)))
    assert [job.data["args"] for job in jobs] == [[0], [1], [2]]
