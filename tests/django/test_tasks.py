"""The @task decorator: names, data shape, options, enqueue / aenqueue, on_commit, dispatch."""

from __future__ import annotations

import asyncio
import inspect
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import factory
import pytest
from django.db import transaction
from django.test import override_settings
from django.utils import timezone

from django_bullq import task as task_from_package
from django_bullq.conf import get_queue
from django_bullq.core.errors import SerializationError, UnrecoverableError
from django_bullq.core.job import Job
from django_bullq.exceptions import TaskRegistryError
from django_bullq.jobdata import CallChecker
from django_bullq.producer.pending import PendingEnqueue
from django_bullq.producer.registry import registry
from django_bullq.producer.task import Task, task
from django_bullq.worker.dispatch import process_job
from tests.support.helpers_django import burst
from tests.testapp import tasks as sample
from tests.testapp.models import Note


class NoteFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Note

    slug = factory.Sequence(lambda n: f"note-{n}")
    text = factory.Faker("sentence")


# --- declaration ---------------------------------------------------------------------------


def test_package_exports_task() -> None:
    assert task_from_package is task


def test_autodiscovered_tasks_are_registered() -> None:
    assert registry.get("tests.testapp.tasks.add") is sample.add
    assert registry.get("email") is sample.email


def test_default_name_is_the_import_path() -> None:
    assert sample.add.name == "tests.testapp.tasks.add"
    assert sample.add.__name__ == "add"
    assert isinstance(sample.add, Task)


def test_calling_the_task_runs_it_here() -> None:
    assert sample.add(2, b=3) == 5
    assert sample.add.call(1, 1) == 2


def test_unknown_option_is_rejected_at_decoration() -> None:
    with pytest.raises(TypeError, match="atempts"):
        task(atempts=3)(lambda: None)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"priority": -1}, "priority"),
        ({"delay": "soon"}, "delay must be"),
        ({"backoff": {"type": "fixed"}}, "needs a delay"),
        ({"backoff": {"type": "exponential", "delay": -5}}, "backoff delay"),
    ],
)
def test_invalid_option_is_rejected_at_decoration(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        task(**options)(lambda: None)


def test_two_functions_cannot_share_a_name() -> None:
    def one() -> None: ...

    def two() -> None: ...

    task(name="tests.shared-name")(one)
    try:
        with pytest.raises(TaskRegistryError, match="already bound"):
            task(name="tests.shared-name")(two)
    finally:
        registry.unregister("tests.shared-name")


def test_using_returns_a_copy() -> None:
    other = sample.configured.using(queue="elsewhere", attempts=7, priority=None)
    assert other is not sample.configured
    assert other.queue_name == "elsewhere"
    assert other.job_options == {"attempts": 7, "backoff": 10}
    assert sample.configured.job_options == {"attempts": 3, "backoff": 10, "priority": 5}
    assert registry.get(sample.configured.name) is sample.configured
    with pytest.raises(TypeError, match="name"):
        sample.configured.using(name="x")


# --- enqueue -------------------------------------------------------------------------------


def test_enqueue_stores_args_and_kwargs(queue_name: str) -> None:
    job = sample.add.using(queue=queue_name).enqueue(2, b=3)
    assert isinstance(job, Job)
    stored = get_queue(queue_name).get_job(job.id)
    assert stored is not None
    assert stored.name == "tests.testapp.tasks.add"
    assert stored.data == {"args": [2], "kwargs": {"b": 3}}
    assert stored.get_state() == "waiting"


def test_enqueue_uses_the_default_queue(settings: Any, queue_name: str) -> None:
    settings.BULLQ = {**settings.BULLQ, "DEFAULT_QUEUE": queue_name}
    job = sample.add.enqueue(1)
    assert job.queue is not None and job.queue.name == queue_name


def test_task_options_reach_the_job(queue_name: str) -> None:
    job = sample.configured.using(queue=queue_name).enqueue("x")
    assert job.opts["attempts"] == 3
    assert job.opts["backoff"] == {"type": "fixed", "delay": 10}
    assert job.opts["priority"] == 5
    assert get_queue(queue_name).get_job_state(job.id) == "prioritized"


def test_using_options_reach_the_job(queue_name: str) -> None:
    job = sample.add.using(
        queue=queue_name, delay=timedelta(seconds=60), job_id="fixed-id", remove_on_complete=True
    ).enqueue(1)
    assert job.id == "fixed-id"
    assert job.opts["removeOnComplete"] is True
    assert get_queue(queue_name).get_job_state("fixed-id") == "delayed"


def test_lifo_option(queue_name: str) -> None:
    first = sample.add.using(queue=queue_name).enqueue(1)
    second = sample.add.using(queue=queue_name, lifo=True).enqueue(2)
    ids = get_queue(queue_name).get_job_ids("waiting", asc=True)
    assert ids == [second.id, first.id]


async def test_aenqueue(queue_name: str) -> None:
    job = await sample.add.using(queue=queue_name).aenqueue(4, b=5)
    assert isinstance(job, Job)
    stored = await get_queue(queue_name).aget_job(job.id)
    assert stored is not None and stored.data == {"args": [4], "kwargs": {"b": 5}}


@pytest.mark.parametrize(
    ("args", "kwargs", "named"),
    [
        ((object(),), {}, "argument 0 (positional)"),
        ((1, {1, 2}), {}, "argument 1 (positional)"),
        ((1,), {"b": float("nan")}, "argument 'b' (keyword)"),
    ],
)
def test_non_json_argument_fails_at_enqueue(
    queue_name: str, args: tuple[Any, ...], kwargs: dict[str, Any], named: str
) -> None:
    with pytest.raises(SerializationError) as info:
        sample.add.using(queue=queue_name).enqueue(*args, **kwargs)
    assert named in str(info.value)
    assert "'tests.testapp.tasks.add'" in str(info.value)
    assert get_queue(queue_name).count() == 0


async def test_non_json_argument_fails_at_aenqueue(queue_name: str) -> None:
    with pytest.raises(SerializationError, match="argument 'b'"):
        await sample.add.using(queue=queue_name).aenqueue(1, b=object())


def count_encodes(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The values JSON-encoded from now on (every ``dumps`` goes through ``_encode``)."""
    from django_bullq.core import serialization

    seen: list[Any] = []
    real = serialization._encode

    def counting(value: Any) -> str:
        seen.append(value)
        return real(value)

    monkeypatch.setattr(serialization, "_encode", counting)
    return seen


def test_enqueue_encodes_the_job_data_once(
    queue_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the arguments were encoded one by one to check them, then the queue encoded the data
    # again: each argument encoded twice per enqueue
    add = sample.add.using(queue=queue_name)
    seen = count_encodes(monkeypatch)
    job = add.enqueue(1, b={"deep": [1, 2]})
    assert isinstance(job, Job)
    assert [value for value in seen if value != job.opts] == [
        {"args": [1], "kwargs": {"b": {"deep": [1, 2]}}}
    ]
    assert get_queue(queue_name).get_job(job.id).data == job.data  # type: ignore[union-attr]


def test_enqueue_many_encodes_each_job_data_once(
    queue_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    add = sample.add.using(queue=queue_name)
    seen = count_encodes(monkeypatch)
    jobs = add.enqueue_many([(i,) for i in range(5)])
    assert isinstance(jobs[0], Job)
    expected = [{"args": [i], "kwargs": {}} for i in range(5)]
    assert [value for value in seen if value != jobs[0].opts] == expected
    assert [job.data for job in jobs] == expected


# --- raw tasks (jobs of other BullMQ producers) --------------------------------------------


def test_raw_task_enqueues_the_value_as_data(queue_name: str) -> None:
    job = sample.email.using(queue=queue_name).enqueue({"to": "a@example.com"})
    stored = get_queue(queue_name).get_job(job.id)
    assert stored is not None and stored.data == {"to": "a@example.com"}
    with pytest.raises(TypeError, match="exactly one value"):
        sample.email.enqueue({"to": "x"}, 2)


def test_raw_task_processes_a_job_added_by_name(queue_name: str) -> None:
    # what `new Queue(q).add("email", {to: ...})` in Node writes
    job = get_queue(queue_name).add("email", {"to": "node@example.com"})
    burst(queue_name)
    assert job.wait(timeout=5) == {"to": "node@example.com", "job_id": job.id}


# --- on_commit -----------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_enqueue_inside_atomic_waits_for_commit(queue_name: str) -> None:
    queue = get_queue(queue_name)
    with transaction.atomic():
        pending = sample.add.using(queue=queue_name).enqueue(1, b=1)
        assert isinstance(pending, PendingEnqueue)
        assert not pending.enqueued
        assert queue.count() == 0
    assert pending.enqueued
    assert pending.job is not None and queue.get_job(pending.job.id) is not None
    assert queue.count() == 1


@pytest.mark.django_db(transaction=True)
def test_rolled_back_transaction_enqueues_nothing(queue_name: str) -> None:
    with pytest.raises(ZeroDivisionError), transaction.atomic():
        pending = sample.add.using(queue=queue_name).enqueue(1)
        1 / 0  # noqa: B018
    assert pending.job is None
    assert get_queue(queue_name).count() == 0


@pytest.mark.django_db(transaction=True)
def test_on_commit_false_enqueues_at_once(queue_name: str) -> None:
    with transaction.atomic():
        job = sample.add.using(queue=queue_name, on_commit=False).enqueue(1)
        assert isinstance(job, Job)
        assert get_queue(queue_name).count() == 1


@pytest.mark.django_db(transaction=True)
def test_serialization_error_is_raised_inside_atomic_not_at_commit(queue_name: str) -> None:
    with transaction.atomic(), pytest.raises(SerializationError):
        sample.add.using(queue=queue_name).enqueue(object())
    assert get_queue(queue_name).count() == 0


# --- the dispatcher ------------------------------------------------------------------------


def _job(name: str, data: Any) -> Job:
    return Job(queue=None, id="1", name=name, data=data)


def test_process_job_calls_the_task() -> None:
    assert process_job(_job(sample.add.name, {"args": [1], "kwargs": {"b": 2}})) == 3
    assert process_job(_job(sample.add.name, {"args": [5]})) == 5


def test_unknown_job_name_is_unrecoverable() -> None:
    with pytest.raises(UnrecoverableError, match="no task registered for job name 'nope'"):
        process_job(_job("nope", {}))


@pytest.mark.parametrize(
    "data", [[1, 2], "text", {"args": [1], "extra": 1}, {"args": {"a": 1}}, {"kwargs": [1]}]
)
def test_bad_data_shape_is_unrecoverable(data: Any) -> None:
    with pytest.raises(UnrecoverableError, match="job data for task"):
        process_job(_job(sample.add.name, data))


def test_arguments_not_matching_the_signature_are_unrecoverable() -> None:
    with pytest.raises(UnrecoverableError, match="does not match the signature"):
        process_job(_job(sample.add.name, {"args": [1, 2, 3]}))


def test_async_task_returns_an_awaitable() -> None:
    coro = process_job(_job(sample.async_add.name, {"args": [1, 2]}))
    assert asyncio.iscoroutine(coro)
    coro.close()


def test_worker_runs_sync_async_and_bad_jobs(queue_name: str) -> None:
    queue = get_queue(queue_name)
    ok = sample.add.using(queue=queue_name).enqueue(20, b=22)
    aok = sample.async_add.using(queue=queue_name).enqueue(1, 2)
    unknown = queue.add("not.a.task", {"args": []})
    bad = queue.add(sample.add.name, {"positional": [1]})
    corrupt = queue.add(sample.add.name, {"args": []})
    queue.client.hdel(queue.keys.job(corrupt.id), "data")
    unrecoverable = sample.give_up.using(queue=queue_name, attempts=5).enqueue()
    configured_job = queue.add(sample.configured.name, {"args": ["x"]})
    after = sample.add.using(queue=queue_name).enqueue(1)
    burst(queue_name)
    assert ok.wait(timeout=5) == 42
    assert aok.wait(timeout=5) == 3
    assert after.wait(timeout=5) == 1
    reasons = {j.id: j.refresh().failed_reason for j in (unknown, bad, corrupt, unrecoverable)}
    assert reasons[unknown.id] == "no task registered for job name 'not.a.task'"
    assert 'must be {"args"' in (reasons[bad.id] or "")
    assert "no 'data' field" in (reasons[corrupt.id] or "")
    assert reasons[unrecoverable.id] == "not worth retrying"
    assert unrecoverable.attempts_made == 1
    assert configured_job.wait(timeout=5) == "x"


def test_current_job_is_set_for_the_task(queue_name: str) -> None:
    job = sample.email.using(queue=queue_name).enqueue({"to": "t@example.com"})
    burst(queue_name)
    assert job.wait(timeout=5)["job_id"] == job.id


def test_many_tasks_in_one_burst(queue_name: str) -> None:
    key = f"calls-{uuid.uuid4().hex}"
    bound = sample.count_calls.using(queue=queue_name)
    jobs = [bound.enqueue(key) for _ in range(30)]
    burst(queue_name, concurrency=4)
    assert all(j.wait(timeout=5) == "done" for j in jobs)
    assert int(get_queue(queue_name).client.get(key)) == 30


@pytest.mark.django_db(transaction=True)
def test_db_tasks_through_the_worker(queue_name: str) -> None:
    NoteFactory.create_batch(25)
    count = sample.count_notes.using(queue=queue_name).enqueue()
    create = sample.create_note.using(queue=queue_name).enqueue("from-worker")
    burst(queue_name)
    assert count.wait(timeout=5) == 25
    assert Note.objects.filter(pk=create.wait(timeout=5)).exists()


@pytest.mark.django_db(transaction=True)
def test_async_task_uses_the_async_orm(queue_name: str) -> None:
    NoteFactory.create_batch(3)
    jobs = [sample.async_count_notes.using(queue=queue_name).enqueue() for _ in range(3)]
    burst(queue_name, concurrency=2)
    assert [j.wait(timeout=5) for j in jobs] == [3, 3, 3]


@pytest.mark.django_db
def test_testcase_style_with_captured_on_commit_callbacks(
    queue_name: str, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        pending = sample.add.using(queue=queue_name).enqueue(1)
        assert isinstance(pending, PendingEnqueue) and not pending.enqueued
    assert pending.job is not None
    assert get_queue(queue_name).get_job_state(pending.job.id) == "waiting"


@pytest.mark.django_db(transaction=True)
def test_deferred_enqueue_keeps_the_arguments_of_the_call(queue_name: str) -> None:
    items = [1, 2]
    with transaction.atomic():
        pending = sample.configured.using(queue=queue_name).enqueue(items)
        items.append(3)
    assert pending.job is not None and pending.job.data == {"args": [[1, 2]], "kwargs": {}}


# -------------------------------------------------------------------------------------------------
# Case B03: a naive "run at" datetime is read in TIME_ZONE with the offset of *that* instant.


ZONES = ["UTC", "Europe/London", "America/New_York", "Australia/Sydney", "Pacific/Auckland"]


SEASONS = [(1, 15), (7, 15)]  # January and July of next year: always in the future


def stored_due_ms(queue_name: str, job_id: str) -> int:
    """The due time the delayed set holds (score = due ms * 4096 + sequence)."""
    score = get_queue(queue_name).client.zscore(get_queue(queue_name).keys["delayed"], job_id)
    assert score is not None, "job is not in the delayed set"
    return int(score) // 4096


@pytest.mark.parametrize("zone", ZONES)
@pytest.mark.parametrize(("month", "day"), SEASONS)
def test_case_b03_naive_run_at_is_the_intended_instant(
    queue_name: str, zone: str, month: int, day: int
) -> None:
    year = datetime.now().year + 1
    naive = datetime(year, month, day, 9, 30)
    intended = naive.replace(tzinfo=ZoneInfo(zone))  # zoneinfo: the offset in effect then
    with override_settings(TIME_ZONE=zone):
        job = sample.add.using(queue=queue_name, delay=naive).enqueue(1)
    expected_ms = int(intended.timestamp() * 1000)
    assert stored_due_ms(queue_name, job.id) - expected_ms == 0
    assert job.timestamp + job.delay == expected_ms


@pytest.mark.parametrize("zone", ZONES)
def test_case_b03_naive_now_plus_one_hour_fires_in_one_hour(queue_name: str, zone: str) -> None:
    with override_settings(TIME_ZONE=zone):
        now = timezone.now()
        naive = timezone.localtime(now + timedelta(hours=1)).replace(tzinfo=None)
        job = sample.add.using(queue=queue_name, delay=naive).enqueue(1)
    expected_ms = int((now + timedelta(hours=1)).timestamp() * 1000)
    # the naive value carries microseconds; ms rounding may differ by one
    assert abs(stored_due_ms(queue_name, job.id) - expected_ms) <= 1
    assert 3_599_000 <= job.delay <= 3_600_001
    assert get_queue(queue_name).get_job_state(job.id) == "delayed"


def test_case_b03_aware_datetime_is_kept(queue_name: str) -> None:
    due = datetime.now(UTC).replace(microsecond=0) + timedelta(hours=2)
    with override_settings(TIME_ZONE="Australia/Sydney"):
        job = sample.add.using(
            queue=queue_name, delay=due.astimezone(ZoneInfo("America/New_York"))
        ).enqueue(1)
    assert stored_due_ms(queue_name, job.id) == int(due.timestamp() * 1000)


def test_case_b03_naive_datetime_without_use_tz(queue_name: str) -> None:
    year = datetime.now().year + 1
    with override_settings(USE_TZ=False, TIME_ZONE="Europe/London"):
        job = sample.add.using(queue=queue_name, delay=datetime(year, 7, 1, 12, 0)).enqueue(1)
    expected = datetime(year, 7, 1, 11, 0, tzinfo=UTC)  # BST = UTC+1
    assert stored_due_ms(queue_name, job.id) == int(expected.timestamp() * 1000)


def test_case_b03_decorator_level_naive_datetime(queue_name: str) -> None:
    from django_bullq.producer.task import Task

    year = datetime.now().year + 1
    naive = datetime(year, 1, 10, 8, 0)
    bound = Task(
        sample.add.func, name=sample.add.name, queue=queue_name, job_options={"delay": naive}
    )
    with override_settings(TIME_ZONE="Pacific/Auckland"):
        job = bound.enqueue(1)
    expected = naive.replace(tzinfo=ZoneInfo("Pacific/Auckland"))  # NZDT, UTC+13
    assert stored_due_ms(queue_name, job.id) == int(expected.timestamp() * 1000)


def test_case_b03_ambiguous_and_skipped_wall_times(queue_name: str) -> None:
    """docs/tasks.md: a repeated wall time means the first one; a skipped one moves forward."""
    year = datetime.now().year + 1
    # last Sunday of October 01:30 happens twice in London (BST, then GMT)
    october = max(
        datetime(year, 10, d) for d in range(25, 32) if datetime(year, 10, d).weekday() == 6
    )
    march = max(datetime(year, 3, d) for d in range(25, 32) if datetime(year, 3, d).weekday() == 6)
    with override_settings(TIME_ZONE="Europe/London"):
        repeated = sample.add.using(
            queue=queue_name, delay=october.replace(hour=1, minute=30)
        ).enqueue(1)
        skipped = sample.add.using(
            queue=queue_name, delay=march.replace(hour=1, minute=30)
        ).enqueue(1)
    first = october.replace(hour=0, minute=30, tzinfo=UTC)  # 01:30 BST
    forward = march.replace(hour=1, minute=30, tzinfo=UTC)  # = 02:30 BST
    assert stored_due_ms(queue_name, repeated.id) == int(first.timestamp() * 1000)
    assert stored_due_ms(queue_name, skipped.id) == int(forward.timestamp() * 1000)


def test_call_checker_binds_each_call_shape_once(monkeypatch: pytest.MonkeyPatch) -> None:
    binds: list[tuple[Any, ...]] = []
    signature = inspect.signature(sample.add.func)
    original = inspect.Signature.bind

    def counting_bind(self: inspect.Signature, *args: Any, **kwargs: Any) -> Any:
        binds.append((len(args), *kwargs))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(inspect.Signature, "bind", counting_bind)
    checker = CallChecker(sample.add.name, signature)
    for i in range(5):
        assert checker.split({"args": [i], "kwargs": {"b": i}}) == ([i], {"b": i})
        assert checker.split({"args": [i, i]}) == ([i, i], {})
    for _ in range(2):  # a shape that does not bind is never remembered
        with pytest.raises(UnrecoverableError, match="does not match the signature"):
            checker.split({"args": [1, 2, 3]})
    assert binds == [(1, "b"), (2,), (3,), (3,)]
